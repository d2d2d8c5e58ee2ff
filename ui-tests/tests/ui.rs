//! Compile-pass and compile-fail cases of the macros, run with trybuild. Regenerate the expected
//! `.stderr` files with `TRYBUILD=overwrite cargo test -p cameleon-ui-tests` on the pinned
//! toolchain (`rust-toolchain.toml`).

#[test]
fn pipeline_macro() {
    let t = trybuild::TestCases::new();
    t.pass("pipeline/pass/*.rs");
    t.compile_fail("pipeline/fail/*.rs");
}
