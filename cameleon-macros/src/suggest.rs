//! "Did you mean" suggestions: the one place the macros find the known name closest to a
//! misspelt one (a key, a setting, a param, a port, an instance).

/// The closest name to `word` among `candidates`, if it is close enough to be a typo: at most a
/// third of the longer name's characters apart (and one edit always is). On a tie, the first
/// candidate wins.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The Damerau–Levenshtein distance between `a` and `b` in its optimal-string-alignment form:
/// the fewest insertions, deletions, substitutions and transpositions of two adjacent characters
/// that turn one into the other, no substring being edited twice. A transposition
/// (`lable` → `label`) is one edit, where plain Levenshtein counts two.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i - 2, i - 1 and i of the table: `row[j]` is the distance between the first `i`
    // characters of `a` and the first `j` of `b`.
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let substitution = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut d = substitution.min(prev[j] + 1).min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transposition_is_one_edit() {
        assert_eq!(distance("lable", "label"), 1);
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("ouptut", "output"), 1);
    }

    #[test]
    fn a_substitution_insertion_or_deletion_is_one_edit() {
        assert_eq!(distance("sank", "sink"), 1);
        assert_eq!(distance("snk", "sink"), 1);
        assert_eq!(distance("sinks", "sink"), 1);
        assert_eq!(distance("sink", "sink"), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", ""), 3);
    }

    #[test]
    fn no_substring_is_edited_twice() {
        // Optimal string alignment, not unrestricted Damerau–Levenshtein (which gives 2: swap
        // `ca` to `ac`, then insert `b`).
        assert_eq!(distance("ca", "abc"), 3);
    }

    #[test]
    fn did_you_mean_suggests_a_typo() {
        let keys = ["id", "label", "family", "firing", "emits"];
        assert_eq!(did_you_mean("lable", keys), Some("label"));
        assert_eq!(did_you_mean("famliy", keys), Some("family"));
        assert_eq!(did_you_mean("snk", ["chunker", "sink"]), Some("sink"));
    }

    #[test]
    fn did_you_mean_does_not_suggest_unrelated_names() {
        assert_eq!(did_you_mean("zzz", ["chunker", "sink"]), None);
        assert_eq!(did_you_mean("timeout", ["id", "label", "family"]), None);
        assert_eq!(did_you_mean("ab", ["cd"]), None);
        assert_eq!(did_you_mean("anything", []), None);
    }
}
