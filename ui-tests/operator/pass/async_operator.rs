// Asserts: `exec = async` (the keyword, or the string "async") declares an async operator: it
// implements `RunAsync` (with every optional method: `rollback`, `consumes`, `validate`,
// `control`), not `Run`; it reports `Execution::Async` to the engine and the catalogue; it runs
// from the synchronous API; and it has port handles, so `pipeline!` can use it, inferring a
// generic async operator's type from its connections.
#![deny(warnings)]

use cameleon::catalogue::{BuildContext, Catalogue, ParamError};
use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;
use cameleon::verify::FiniteControl;
use cameleon::{Params, Retry};

/// Echoes its input after awaiting `yields` ready futures.
#[operator(id = "echo_later", label = "Echo later", exec = async)]
pub struct EchoLater<T: PortType = Any> {
    /// how many futures it awaits first
    #[param(default = 1)]
    yields: u32,
    #[input]
    in_data: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> EchoLater<T> {
    fn new(yields: u32) -> Self {
        EchoLater {
            yields,
            __cameleon_ports: std::marker::PhantomData,
        }
    }
}

impl<T: PortType> RunAsync for EchoLater<T> {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        for _ in 0..self.yields {
            std::future::ready(()).await;
        }
        let v = cx.value(Self::in_data).cloned().ok_or("no input")?;
        cx.emit_value(Self::out_data, v);
        Ok(())
    }

    fn rollback(&mut self, emitted: &Emitted<'_, Self>) {
        let _ = emitted.value(Self::out_data);
    }

    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.yields > 100 {
            return Err(ParamError::new("yields".to_owned(), "at most 100"));
        }
        Ok(())
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        None
    }
}

/// Does nothing, asynchronously; declared with the string form and with settings.
#[operator(id = "nap", exec = "async", timeout_ms = 1000, retry(max = 1))]
pub struct Nap {
    #[input]
    in_data: In<Any>,
}

impl RunAsync for Nap {
    async fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {
    assert_eq!(EchoLater::<DataString>::new(1).execution(), Execution::Async);
    assert_eq!(Nap.execution(), Execution::Async);
    assert_eq!(
        Nap.settings().retry,
        Some(Retry {
            max: 1,
            backoff_ms: 0
        })
    );
    let cat = Catalogue::global();
    assert_eq!(cat.get("nap").map(|e| e.execution), Some(Execution::Async));

    // The factory calls `RunAsync::validate`.
    let mut p = Params::new();
    p.insert("yields".into(), serde_json::json!(101));
    assert!(cat.build("echo_later", &p, &BuildContext::default()).is_err());

    let net = pipeline! {
        name = "echo";
        let src = Source::new("hi");
        let echo = EchoLater::new(2);
        let nap = Nap;
        let out = Sink::new();
        src.out_data -> echo.in_data;
        echo.out_data -> out.in_data;
        echo.out_data -> nap.in_data;
    };
    let echo = &net.operators()[1].spec;
    assert_eq!(echo.outputs[0].ty, TypeRef::of::<DataString>());
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().expect("runs"), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), "hi");
}
