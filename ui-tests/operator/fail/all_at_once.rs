// Asserts: every mistake of a declaration is reported in one go, each at its own token — an
// unknown family and an unknown firing (with suggestions), the missing `id`, an `emits` naming
// an input, a variadic group sized by no param — and nothing else: no follow-on errors from the
// user's `run`, which uses the port handles.
use cameleon::prelude::*;

#[operator(family = structurel, firing = alll, emits = [[in_data]])]
pub struct Messy<T: PortType = Any> {
    #[input]
    in_data: In<T>,
    #[output(variadic = arty)]
    out_a: Out<T>,
}

impl<T: PortType> Run for Messy<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_a)
    }
}


fn main() {}
