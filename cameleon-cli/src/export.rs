//! `cameleon export`: diagrams (`--dot`, `--mermaid`, `--svg`) and the PNML net (`--pnml`).

use super::{ExportArgs, Io, exit, load};
use cameleon::export;

pub(super) fn export(a: &ExportArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let net = match load(&a.file, false, false, io)? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    let text = if a.dot {
        export::dot(&net)
    } else if a.mermaid {
        export::mermaid(&net)
    } else if a.svg {
        export::svg(&net)
    } else {
        match cameleon::verify::to_pnml(&net) {
            Ok(t) => t,
            Err(e) => {
                writeln!(
                    io.stderr,
                    "error: cannot export `{}` to PNML: {e}",
                    a.file.display()
                )?;
                return Ok(exit::ERROR);
            }
        }
    };
    io.stdout.write_all(text.as_bytes())?;
    Ok(exit::OK)
}
