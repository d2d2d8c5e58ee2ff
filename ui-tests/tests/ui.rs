//! The compile-pass and compile-fail cases of the macros (trybuild). The `.stderr` files are
//! written by the pinned toolchain (`rust-toolchain.toml`): regenerate them with
//! `TRYBUILD=overwrite cargo test -p cameleon-ui-tests`.

#[test]
fn operator() {
    let t = trybuild::TestCases::new();
    t.pass("operator/pass/*.rs");
    t.compile_fail("operator/fail/*.rs");
}
