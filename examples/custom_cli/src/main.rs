//! The `cameleon` command line with one more operator, `acme_shout`, and one more tool,
//! `acme_word_count`.
//!
//! A crate that declares operators gets the whole command line — `run`, `check`, `fmt`,
//! `catalogue`, `export`, `schema` — with them, by making `cameleon_cli::main` its `main`. Every
//! `#[operator]` linked into the program is in the catalogue `.cm` files name types from, so
//!
//! ```text
//! cargo run -p custom-cli -- run examples/custom_cli/shout.cm
//! cargo run -p custom-cli -- catalogue
//! ```
//!
//! runs a `.cm` file that uses `acme_shout`, and lists it beside the standard operators. (The
//! plain `cameleon` binary does not know it: it reports `unknown operator type`.) Likewise
//! `cargo run -p custom-cli -- tools` lists `acme_word_count`, and `call acme_word_count
//! '{"text": "a b"}'` calls it. Operators and tools declared in another crate are linked in by
//! naming that crate once: `use my_ops as _;`.

use std::process::ExitCode;

use cameleon::prelude::*;

/// Shouts a text: upper case, then `marks` exclamation marks.
///
/// Ids of operators outside the standard library take a prefix of their own (`acme_`), so they
/// never collide with a standard operator or another crate's.
#[operator(id = "acme_shout", label = "Shout", family = behavioral, exec = inline)]
pub struct AcmeShout {
    /// how many `!` to add
    #[param(default = 1)]
    marks: usize,
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<DataString>,
}

impl Run for AcmeShout {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let text = cx.get(Self::in_data)?;
        let shout = format!("{}{}", text.0.to_uppercase(), "!".repeat(self.marks));
        cx.emit(Self::out_data, DataString(shout));
        Ok(())
    }
}

/// Arguments of `acme_word_count`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct WordCountArgs {
    /// The text whose words to count.
    pub text: String,
}

/// Counts the words of a text (runs of non-space characters).
#[tool(name = "acme_word_count")]
fn word_count(args: WordCountArgs) -> Result<usize, ToolError> {
    Ok(args.text.split_whitespace().count())
}

fn main() -> ExitCode {
    cameleon_cli::main()
}
