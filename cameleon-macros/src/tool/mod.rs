//! `#[tool]`: parse ([`attr`], [`ast`]), check ([`check`]), then generate ([`expand`]). A
//! declaration with errors is emitted unchanged next to them (so the function still exists
//! for the rest of the crate), without a registration.

pub mod ast;
pub mod attr;
pub mod check;
pub mod expand;
