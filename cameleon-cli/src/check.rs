//! `cameleon check`: validate a file — its net, and the names it gives to the capabilities
//! (chat models, embedders, memories, tools); with `--verify`, explore its state space.

use serde_json::json;

use super::{CheckArgs, Io, display_name, exit, report_invalid};
use cameleon::capabilities::{CapabilitiesError, NameCheck, Runtime, check_names};
use cameleon::cm::CmProblem;
use cameleon::net::Net;
use cameleon::verify::{Progress, Verdict, VerifyOptions, verify_with};

pub(super) fn check(a: &CheckArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let connected = match crate::satellite::connect(&a.nats, io)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let net = match crate::satellite::load(
        &a.file,
        false,
        a.json,
        connected.as_ref(),
        a.capabilities.as_deref(),
        io,
    )? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    let found = match names(&net, a, connected.as_ref(), io)? {
        Ok(found) => found,
        Err(code) => return Ok(code),
    };
    let warnings: &[CmProblem] = found.warnings.as_ref().map_or(&[], |w| w.problems());
    if let Some(e) = &found.errors {
        if a.json {
            let v = json!({
                "valid": false,
                "file": e.file_name(),
                "problems": e.problems(),
                "warnings": warnings,
            });
            writeln!(io.stdout, "{v}")?;
        } else {
            write!(io.stderr, "{}", crate::render::cm_error(e, io.color))?;
            show_warnings(&found, io)?;
        }
        return Ok(exit::INVALID);
    }
    if !a.json {
        show_warnings(&found, io)?;
    }
    if a.against.is_some() {
        return crate::migrate::against(&net, a, io);
    }
    if a.verify {
        return verify(&net, a, warnings, io);
    }
    let (ops, conns) = (net.operators().len(), net.connections().len());
    if a.json {
        let v = json!({
            "valid": true,
            "file": a.file.display().to_string(),
            "name": net.name(),
            "operators": ops,
            "connections": conns,
            "warnings": warnings,
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

/// The net's capability names resolved against the capabilities `run` would use (read, never
/// built: nothing a capabilities file configures is started or contacted). `Err`: the exit
/// code of a capabilities file with problems, reported like `run` reports it.
fn names(
    net: &Net,
    a: &CheckArgs,
    connected: Option<&crate::satellite::Connected>,
    io: &mut Io<'_>,
) -> std::io::Result<Result<NameCheck, i32>> {
    let mut builder = Runtime::builder().for_cm_file(&a.file, a.capabilities.as_deref());
    if let Some(c) = connected {
        builder = builder.source(c.source());
    }
    let names = match builder.names() {
        Ok(n) => n,
        Err(CapabilitiesError::File(e)) => {
            report_invalid(&e, a.json, io)?;
            return Ok(Err(exit::INVALID));
        }
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(Err(exit::INVALID));
        }
    };
    // The loader read the same file a moment ago.
    let text = std::fs::read_to_string(&a.file)?;
    let file = a.file.display().to_string();
    Ok(Ok(check_names(net, &file, &text, &names)))
}

/// Draws the warnings on stderr (the file stays valid).
fn show_warnings(found: &NameCheck, io: &mut Io<'_>) -> std::io::Result<()> {
    match &found.warnings {
        Some(w) => write!(io.stderr, "{}", crate::render::cm_warnings(w, io.color)),
        None => Ok(()),
    }
}

/// `check --verify`: the state-space exploration of docs/semantics.md §8 (`cameleon::verify`):
/// the properties with witnesses, as text or as the JSON object of docs/cli.md
/// (`{"valid":true,"reduced":…,"states":…,"edges":…,"deadlock_free":…,"witness":[…],…}`). Exit 0 when every
/// property holds, 3 when one fails, 4 when the state budget ran out before a verdict.
fn verify(
    net: &Net,
    a: &CheckArgs,
    warnings: &[CmProblem],
    io: &mut Io<'_>,
) -> std::io::Result<i32> {
    let opts = VerifyOptions::default()
        .max_states(a.max_states)
        .reduce(a.reduce.into())
        .threads(a.threads.map_or(0, usize::from));
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
            m.insert("warnings".into(), json!(warnings));
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
