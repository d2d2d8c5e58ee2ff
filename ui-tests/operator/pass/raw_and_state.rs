// Asserts: a port declared with a raw identifier (`r#type`) is named `type` and its handle is
// `Op::r#type`; internal state may use the type parameter and is restored by a rollback.
use cameleon::prelude::*;

/// Remembers what it passed on.
#[operator(id = "memo", family = structural)]
pub struct Memo<T: PortType = Any> {
    seen: Vec<Option<std::marker::PhantomData<T>>>,
    #[input]
    r#type: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> Run for Memo<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        self.seen.push(None);
        cx.forward(Self::r#type, Self::out_data)
    }
}

fn main() {
    assert_eq!(Memo::<DataString>::r#type.name, "type");
    let mut m: Memo = Memo {
        seen: vec![None],
        __cameleon_ports: std::marker::PhantomData,
    };
    assert_eq!(m.spec().inputs[0].name, "type");
    let before = m.save_state();
    m.seen.push(None);
    Operator::rollback(&mut m, before.as_ref(), &[]);
    assert_eq!(m.seen.len(), 1);
}
