// Asserts: `exec = async` (or `blocking`) on a structural operator, which always runs inline,
// is an error at the value rather than a setting silently ignored.
use cameleon::prelude::*;

#[operator(id = "relay_async", family = structural, exec = async)]
pub struct RelayAsync<T: PortType = Any> {
    #[input]
    in_data: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> RunAsync for RelayAsync<T> {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_data)
    }
}

fn main() {}
