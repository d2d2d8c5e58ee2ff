//! Holder crate for the trybuild cases under `operator/` and `pipeline/`.
