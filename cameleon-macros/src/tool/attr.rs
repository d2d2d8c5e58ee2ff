//! `#[tool(...)]`: the tool's name and time limit.

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::ctxt::Ctxt;
use crate::operator::attr::keys::{Seen, lit_str, metas, name_value, unknown_key, whole_number};
use crate::symbol::{NAME, TIMEOUT_MS, TOOL_KEYS};

/// What `#[tool(...)]` says.
#[derive(Default)]
pub struct ToolArgs {
    /// `name = "…"`.
    pub name: Option<LitStr>,
    /// `timeout_ms = N`.
    pub timeout_ms: Option<u64>,
}

impl ToolArgs {
    /// Reads the attribute's arguments, recording every problem.
    pub fn parse(cx: &Ctxt, tokens: TokenStream) -> Self {
        let mut out = ToolArgs::default();
        let place = "`#[tool]`".to_owned();
        let mut seen = Seen::new(place.clone());
        for meta in metas(cx, tokens) {
            let path = meta.path().clone();
            if path == NAME {
                if seen.first(cx, NAME, &meta)
                    && let Some(e) = name_value(cx, "tool", &meta)
                {
                    out.name = lit_str(cx, NAME, e);
                }
            } else if path == TIMEOUT_MS {
                if seen.first(cx, TIMEOUT_MS, &meta)
                    && let Some(e) = name_value(cx, "tool", &meta)
                {
                    out.timeout_ms =
                        whole_number(cx, TIMEOUT_MS, e, u128::from(u64::MAX), "timeout_ms = 5000");
                }
            } else {
                unknown_key(cx, &place, &path, TOOL_KEYS);
            }
        }
        out
    }
}
