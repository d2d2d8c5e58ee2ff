//! `cameleon check`: validate a file; with `--verify`, explore its state space.

use serde_json::json;

use super::{CheckArgs, Io, display_name, exit, load};
use cameleon::net::Net;
use cameleon::verify::{Progress, Verdict, VerifyOptions, verify_with};

pub(super) fn check(a: &CheckArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let net = match load(&a.file, false, a.json, io)? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    if a.verify {
        return verify(&net, a, io);
    }
    let (ops, conns) = (net.operators().len(), net.connections().len());
    if a.json {
        let v = json!({
            "valid": true,
            "file": a.file.display().to_string(),
            "name": net.name(),
            "operators": ops,
            "connections": conns,
        });
        writeln!(io.stdout, "{v}")?;
    } else {
        writeln!(
            io.stdout,
            "{}: valid net `{}` ({ops} operator{}, {conns} connection{})",
            a.file.display(),
            display_name(&net, &a.file),
            if ops == 1 { "" } else { "s" },
            if conns == 1 { "" } else { "s" },
        )?;
    }
    Ok(exit::OK)
}

/// `check --verify`: the state-space exploration of docs/semantics.md §8 (`cameleon::verify`):
/// the properties with witnesses, as text or as the JSON object of docs/cli.md
/// (`{"valid":true,"reduced":…,"states":…,"edges":…,"deadlock_free":…,"witness":[…],…}`). Exit 0 when every
/// property holds, 3 when one fails, 4 when the state budget ran out before a verdict.
fn verify(net: &Net, a: &CheckArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let opts = VerifyOptions::default()
        .max_states(a.max_states)
        .reduce(a.reduce.into());
    let bar = if io.progress && !a.json {
        let b = indicatif::ProgressBar::with_draw_target(
            Some(opts.max_states),
            indicatif::ProgressDrawTarget::stderr(),
        );
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos} states explored, {msg} ({elapsed}) [{bar:30}] of the budget",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let report = verify_with(net, &opts, &mut |p: &Progress| {
        bar.set_position(p.states);
        bar.set_message(format!("{} expanded, {} edges", p.expanded, p.edges));
    });
    bar.finish_and_clear();
    if a.json {
        let mut v = report.to_json();
        if let Some(m) = v.as_object_mut() {
            m.insert("file".into(), json!(a.file.display().to_string()));
        }
        writeln!(io.stdout, "{v}")?;
    } else {
        writeln!(io.stdout, "{report}")?;
    }
    Ok(match report.verdict {
        Verdict::Holds => exit::OK,
        Verdict::Fails => exit::DEADLOCK,
        Verdict::Inconclusive => exit::LIMIT,
    })
}
