//! A chat model's or embedder's price in a capabilities file: `price_usd` (docs/capabilities.md,
//! "Prices"), which a run's `cost_usd` budget counts.

use super::config::Cx;
use super::kinds::Section;
use crate::cm::CmProblemKind;
use crate::cm::tree::{self, Node};
use crate::operator::capability::Price;

/// The key of a chat model's or embedder's price (docs/capabilities.md).
pub(super) const PRICE: &str = "price_usd";

/// Reads `price_usd: {prompt_per_mtok: X, completion_per_mtok: Y}` (US dollars per million
/// tokens, each a finite number ≥ 0) of entry `name`; `None` after a problem.
pub(super) fn read_price(cx: &mut Cx<'_>, section: Section, name: &str, v: &Node) -> Option<Price> {
    let hint = "e.g. `price_usd: {prompt_per_mtok: 0.15, completion_per_mtok: 0.60}` (US dollars per million tokens)";
    if section == Section::Memories {
        cx.push(
            CmProblemKind::Schema,
            v.span,
            format!("memory `{name}` has no price: only chat models and embedders are priced"),
            None,
        );
        return None;
    }
    let price = match tree::from_node::<Price>(v, cx.src()) {
        Ok(p) => p,
        Err(e) => {
            for p in e.0 {
                cx.push(
                    CmProblemKind::Schema,
                    p.span.unwrap_or(v.span),
                    format!("`{PRICE}` of {} `{name}`: {}", section.what(), p.message),
                    Some(p.hint.unwrap_or_else(|| hint.into())),
                );
            }
            return None;
        }
    };
    for (key, x) in [
        ("prompt_per_mtok", price.prompt_per_mtok),
        ("completion_per_mtok", price.completion_per_mtok),
    ] {
        if !x.is_finite() || x < 0.0 {
            let span = v.get(key).map_or(v.span, |n| n.span);
            cx.push(
                CmProblemKind::Schema,
                span,
                format!("`{key}` must be a number of US dollars, 0 or more, not {x}"),
                Some(hint.into()),
            );
            return None;
        }
    }
    Some(price)
}
