//! `#[tool(...)]`: the tool's name, time limit, effects and whether it is idempotent.

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::ctxt::Ctxt;
use crate::operator::attr::keys::{
    Seen, choice, lit_str, metas, name_value, unknown_key, whole_number,
};
use crate::symbol::{EFFECT_NAMES, EFFECTS, IDEMPOTENT, NAME, TIMEOUT_MS, TOOL_KEYS};

/// The side effects a tool declares (`effects = write`), as `cameleon::tools::Effect` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    None,
    Read,
    Write,
    External,
}

/// What `#[tool(...)]` says.
#[derive(Default)]
pub struct ToolArgs {
    /// `name = "…"`.
    pub name: Option<LitStr>,
    /// `timeout_ms = N`.
    pub timeout_ms: Option<u64>,
    /// `effects = none|read|write|external` (`None`: not said, so `external`).
    pub effects: Option<Effect>,
    /// `idempotent`: a repeated call does what the first did.
    pub idempotent: bool,
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
            } else if path == EFFECTS {
                if seen.first(cx, EFFECTS, &meta)
                    && let Some(e) = name_value(cx, "tool", &meta)
                {
                    out.effects = choice(
                        cx,
                        EFFECTS,
                        e,
                        EFFECT_NAMES,
                        &[Effect::None, Effect::Read, Effect::Write, Effect::External],
                    );
                }
            } else if path == IDEMPOTENT {
                if seen.first(cx, IDEMPOTENT, &meta) {
                    match &meta {
                        syn::Meta::Path(_) => out.idempotent = true,
                        _ => cx.error_spanned_by(
                            &meta,
                            "`idempotent` takes no value: write `#[tool(idempotent)]`",
                        ),
                    }
                }
            } else {
                unknown_key(cx, &place, &path, TOOL_KEYS);
            }
        }
        out
    }
}
