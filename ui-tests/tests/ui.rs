//! The compile-pass and compile-fail cases of the macros (trybuild), `#[operator]`, `#[tool]`
//! and `pipeline!`, built together in one trybuild project. The `.stderr` files are written by
//! the pinned toolchain (`rust-toolchain.toml`): regenerate them with
//! `TRYBUILD=overwrite cargo test -p cameleon-ui-tests`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("operator/pass/*.rs");
    t.compile_fail("operator/fail/*.rs");
    t.pass("pipeline/pass/*.rs");
    t.compile_fail("pipeline/fail/*.rs");
    t.pass("tool/pass/*.rs");
    t.compile_fail("tool/fail/*.rs");
}
