// Asserts: `Any` on a structural operator's port is an error saying to use a type parameter
// (structural ports are type variables), and `Out<Any>` on a behavioral one says outputs have
// one type.
use cameleon::prelude::*;

#[operator(id = "loose", family = structural)]
pub struct Loose {
    #[input]
    in_data: In<Any>,
}

#[operator(id = "vague")]
pub struct Vague {
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<Any>,
}

fn main() {}
