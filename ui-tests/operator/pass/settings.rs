// Asserts: `exec = inline | blocking` and the settings keys `timeout_ms = N` and
// `retry(max = N, backoff_ms = M)` (in any order, `backoff_ms` optional) reach the operator's
// `execution()` and `settings()` and its catalogue entry; without them an operator is
// `blocking` with no settings; a structural operator may say `exec = inline`.
use cameleon::catalogue::Catalogue;
use cameleon::prelude::*;
use cameleon::{OpSettings, Retry};

macro_rules! unary {
    ($name:ident, $id:literal $(, $($keys:tt)+)?) => {
        /// A test operator.
        #[operator(id = $id $(, $($keys)+)?)]
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

unary!(Quick, "quick", exec = inline);
unary!(Heavy, "heavy", exec = blocking, timeout_ms = 250);
unary!(Plain, "plain");
unary!(Hardy, "hardy", retry(backoff_ms = 20, max = 3), timeout_ms = 1_000);
unary!(Eager, "eager", retry(max = 2));

/// Passes its input on.
#[operator(id = "inline_relay", family = structural, exec = inline)]
pub struct InlineRelay<T: PortType = Any> {
    #[input]
    in_data: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> Run for InlineRelay<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_data)
    }
}

fn main() {
    let cat = Catalogue::global();
    let entry = |id: &str| {
        let e = cat.get(id).expect("registered");
        (e.execution, e.settings)
    };
    assert_eq!(Quick.execution(), Execution::Inline);
    assert_eq!(entry("quick"), (Execution::Inline, OpSettings::NONE));
    assert_eq!(Heavy.execution(), Execution::Blocking);
    let heavy = OpSettings {
        timeout_ms: Some(250),
        retry: None,
    };
    assert_eq!(Heavy.settings(), heavy);
    assert_eq!(entry("heavy"), (Execution::Blocking, heavy));
    assert_eq!(Plain.execution(), Execution::Blocking);
    assert_eq!(entry("plain"), (Execution::Blocking, OpSettings::NONE));
    let hardy = OpSettings {
        timeout_ms: Some(1000),
        retry: Some(Retry {
            max: 3,
            backoff_ms: 20,
        }),
    };
    assert_eq!(Hardy.settings(), hardy);
    assert_eq!(entry("hardy"), (Execution::Blocking, hardy));
    assert_eq!(
        Eager.settings().retry,
        Some(Retry {
            max: 2,
            backoff_ms: 0
        })
    );
    assert_eq!(entry("inline_relay").0, Execution::Inline);
}
