// Asserts: every firing policy is accepted (`any`, `all`, `any_no_guard`, `source`, `custom`
// with a `CanFire` impl) and reaches the spec and the catalogue; without `firing`, an operator
// with inputs uses `any` and one without inputs uses `source`.
use cameleon::catalogue::Catalogue;
use cameleon::prelude::*;

macro_rules! unary {
    ($name:ident, $id:literal, $($firing:ident)?) => {
        /// A test operator.
        #[operator(id = $id, label = "Unary" $(, firing = $firing)?)]
        pub struct $name {
            #[input]
            in_data: In<DataString>,
            #[output]
            out_data: Out<DataString>,
        }

        impl Run for $name {
            fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
                cx.forward(Self::in_data, Self::out_data)
            }
        }
    };
}

unary!(OnAny, "on_any", any);
unary!(OnAll, "on_all", all);
unary!(OnAnyNoGuard, "on_any_no_guard", any_no_guard);
unary!(OnDefault, "on_default",);

/// Fires while its input is not EMPTY.
#[operator(id = "on_custom", firing = custom)]
pub struct OnCustom {
    #[input]
    in_data: In<DataString>,
}

impl CanFire for OnCustom {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.inputs[0] != ConnState::Empty
    }
}

impl Run for OnCustom {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

/// Emits once.
#[operator(id = "on_source", firing = source)]
pub struct OnSource {
    #[output]
    out_data: Out<DataBool>,
}

/// Emits once too: no inputs means `source`.
#[operator(id = "on_nothing")]
pub struct OnNothing {
    #[output]
    out_data: Out<DataBool>,
}

impl Run for OnSource {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.emit(Self::out_data, DataBool(true));
        Ok(())
    }
}

impl Run for OnNothing {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.emit(Self::out_data, DataBool(true));
        Ok(())
    }
}

fn main() {
    let cat = Catalogue::global();
    let policy = |id: &str| cat.get(id).unwrap().policy;
    assert_eq!(policy("on_any"), Policy::Any);
    assert_eq!(policy("on_all"), Policy::All);
    assert_eq!(policy("on_any_no_guard"), Policy::AnyNoGuard);
    assert_eq!(policy("on_default"), Policy::Any);
    assert_eq!(policy("on_custom"), Policy::Custom);
    assert_eq!(policy("on_source"), Policy::Source);
    assert_eq!(policy("on_nothing"), Policy::Source);
    assert_eq!(OnAll.spec().policy, Policy::All);
    assert_eq!(cat.get("on_custom").unwrap().label, "OnCustom");
}
