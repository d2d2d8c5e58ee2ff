//! The text form of a [`Report`], as `cameleon check --verify` prints it (the JSON form is the
//! report's serialization).

use std::fmt;

use super::report::{Check, Report, Verdict};

fn mark(h: Option<bool>) -> &'static str {
    match h {
        Some(true) => "ok  ",
        Some(false) => "FAIL",
        None => "?   ",
    }
}

fn seq(labels: &[String]) -> String {
    if labels.is_empty() {
        "(the initial marking)".to_owned()
    } else {
        labels.join(" → ")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.exploration;
        if self.reduced {
            write!(
                f,
                "net `{}`: {} states, {} edges in the state space reduced by stubborn sets",
                self.net, self.states, self.edges
            )?;
        } else {
            write!(
                f,
                "net `{}`: {} reachable states, {} edges",
                self.net, self.states, self.edges
            )?;
        }
        if self.complete {
            let what = if self.reduced { "" } else { "state space " };
            writeln!(f, " ({what}explored completely)")?;
        } else {
            writeln!(
                f,
                "\n  state budget of {} used up: {} states expanded to depth {}, {} not expanded; \
                 raise it with --max-states",
                e.max_states, e.expanded, e.depth, e.frontier
            )?;
        }
        let p = &self.properties;
        let check = |f: &mut fmt::Formatter<'_>, name: &str, c: &Check| -> fmt::Result {
            writeln!(f, "  [{}] {name}", mark(c.holds))?;
            if let Some(m) = &c.message {
                writeln!(f, "         {m}")?;
            }
            if let Some(w) = &c.path {
                writeln!(f, "         witness: {}", seq(w))?;
            }
            Ok(())
        };
        check(f, "deadlock-free", &p.deadlock_free)?;
        check(f, "option to complete", &p.option_to_complete)?;
        writeln!(
            f,
            "  [{}] no dead operators",
            mark(p.no_dead_operators.holds)
        )?;
        for d in &p.no_dead_operators.dead {
            writeln!(f, "         `{}` never fires: {}", d.op, d.reason)?;
        }
        check(f, "1-safe", &p.one_safe)?;
        match p.may_loop.may_loop {
            Some(true) => {
                writeln!(
                    f,
                    "  [info] may loop (runs that only max_loop_iterations stops)"
                )?;
                if let (Some(pre), Some(cyc)) = (&p.may_loop.prefix_path, &p.may_loop.cycle_path) {
                    writeln!(f, "         after: {}", seq(pre))?;
                    writeln!(f, "         cycle: {}", seq(cyc))?;
                } else if p.may_loop.lasso.is_some() {
                    writeln!(
                        f,
                        "         shortest lasso not checked under reduction: the full state space \
                         exceeds the budget (--reduce none with a larger --max-states)"
                    )?;
                }
            }
            Some(false) => writeln!(f, "  [info] no cycle: every run ends")?,
            None => writeln!(f, "  [info] no cycle found in the explored part")?,
        }
        write!(
            f,
            "verdict: {}",
            match self.verdict {
                Verdict::Holds => "every property holds",
                Verdict::Fails => "a property fails",
                Verdict::Inconclusive => "inconclusive (state budget used up)",
            }
        )
    }
}
