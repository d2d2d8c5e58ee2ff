//! `#[operator]`: parse ([`attr`], [`ast`]), check ([`check`]), generate ([`expand`]).

pub mod ast;
pub mod attr;
pub mod check;
pub mod expand;
