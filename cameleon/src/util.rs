//! Small helpers every layer may use: name suggestions for error messages. Crate-private: the
//! macros and the CLI have their own (`cameleon-macros/src/suggest.rs`).

/// The candidate closest to `name`, if close enough to be a likely typo: at most one edit per
/// three characters of `name` (and at least one), where an edit is an insertion, a deletion, a
/// substitution or a transposition of two adjacent characters (`lable` → `label` is one edit).
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The optimal-string-alignment distance (Damerau–Levenshtein without repeated edits of one
/// substring): insertions, deletions, substitutions and adjacent transpositions each cost 1.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: the one two back is needed for transpositions.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j - 1] + cost).min(prev[j] + 1).min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_each_kind_of_edit_once() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("abc", "abd"), 1, "substitution");
        assert_eq!(edit_distance("abc", "abcd"), 1, "insertion");
        assert_eq!(edit_distance("abcd", "abc"), 1, "deletion");
        assert_eq!(edit_distance("lable", "label"), 1, "transposition");
        assert_eq!(edit_distance("ab", "ba"), 1, "transposition");
        assert_eq!(
            edit_distance("ca", "abc"),
            3,
            "OSA: no edit of a transposed pair"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn did_you_mean_finds_close_names_only() {
        assert_eq!(
            did_you_mean("out_dat", ["out_data", "in_data"]),
            Some("out_data")
        );
        assert_eq!(did_you_mean("lable", ["label", "family"]), Some("label"));
        assert_eq!(
            did_you_mean("tranfsorm", ["transform", "format"]),
            Some("transform")
        );
        assert_eq!(did_you_mean("zzz", ["out_data", "in_data"]), None);
    }
}
