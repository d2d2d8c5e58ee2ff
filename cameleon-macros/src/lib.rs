//! Procedural macros of Caméléon. Use them through the `cameleon` crate, which re-exports them.
