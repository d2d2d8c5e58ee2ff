// Asserts: a param whose type names the operator's type parameter is an error at that type:
// the catalogue reads params for the operator built with `Any`.
use cameleon::prelude::*;

#[operator(id = "holder", family = structural)]
pub struct Holder<T: PortType = Any> {
    /// the initial values
    #[param(default = [])]
    initial: Vec<T>,
    #[input]
    in_data: In<T>,
}

fn main() {}
