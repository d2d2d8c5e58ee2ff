//! `#[operator]`: parse ([`attr`], [`ast`]), check ([`check`]), then generate ([`expand`]) — or,
//! for a declaration with errors, emit the stub of [`fallback`] next to them.

pub mod ast;
pub mod attr;
pub mod check;
pub mod expand;
pub mod fallback;
