//! The workflow operators (docs/semantics.md §10) in `pipeline!`: each pattern net written in
//! Rust is the same net as its `.cm` example under `examples/wcp/` (docs/patterns.md), so the
//! operators, their params and their typed ports are the same in both forms.

use std::path::Path;

use cameleon::cm::Loader;
use cameleon::ops::{
    Cancel, Const, Counter, Fork, Join, Map, Merge, Milestone, Mutex, Sink, Source, Subnet,
    Terminate, ThreadMerge, ThreadSplit, Transform, Trigger,
};
use cameleon::prelude::*;

fn example(name: &str) -> Net {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/wcp")
        .join(name);
    Loader::new().load_file(p).unwrap()
}

#[test]
fn deferred_choice_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-16-deferred-choice";
        let offer = Source::new("parcel");
        let split = Fork::default();
        let delivered = Cancel::new(["returned"]);
        let returned = Cancel::new(["delivered"]);
        let invoice = Sink::new();
        let refund = Sink::new();
        offer.out_data -> split.in_data;
        split.out_a -> delivered.in_data;
        split.out_b -> returned.in_data;
        delivered.out_data -> invoice.in_data;
        returned.out_data -> refund.in_data;
    };
    assert_eq!(net, example("wcp16-deferred-choice.cm"));
}

#[test]
fn critical_section_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-39-critical-section";
        let src = Source::new("x");
        let split = Fork::default();
        let lock = Mutex::default();
        let read_a = Transform::new();
        let write_a = Transform::new();
        let read_b = Transform::new();
        let write_b = Transform::new();
        let end_a = Fork::default();
        let end_b = Fork::default();
        let ends = Merge::default();
        let both = Join::default();
        let out = Sink::new();
        src.out_data -> split.in_data;
        split.out_a -> lock.in_a;
        split.out_b -> lock.in_b;
        lock.out_a -> read_a.in_data;
        read_a.out_data -> write_a.in_data;
        write_a.out_data -> end_a.in_data;
        lock.out_b -> read_b.in_data;
        read_b.out_data -> write_b.in_data;
        write_b.out_data -> end_b.in_data;
        end_a.out_a -> ends.in_a;
        end_b.out_a -> ends.in_b;
        ends.out_data -> lock.in_done;
        end_a.out_b -> both.in_a;
        end_b.out_b -> both.in_b;
        both.out_data -> out.in_data;
    };
    assert_eq!(net, example("wcp39-critical-section.cm"));
}

#[test]
fn milestone_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-18-milestone";
        let booking = Source::new("AF123");
        let split = Fork::new(3).unwrap();
        let confirm = Transform::new();
        let ask_change = Transform::new();
        let ready = Transform::new();
        let window = Milestone::new();
        let changed = Sink::new();
        let refused = Sink::new();
        let issued = Sink::new();
        booking.out_data -> split.in_data;
        split.out_a -> confirm.in_data;
        split.out_b -> ask_change.in_data;
        split.out_c -> ready.in_data;
        confirm.out_data -> window.in_reached;
        ask_change.out_data -> window.in_data;
        ready.out_data -> window.in_expire;
        window.out_data -> changed.in_data;
        window.out_late -> refused.in_data;
        window.out_passed -> issued.in_data;
    };
    assert_eq!(net, example("wcp18-milestone.cm"));
}

#[test]
fn transient_trigger_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-23-transient-trigger";
        let ring = Source::new("ring");
        let job = Source::new("job");
        let rings = Merge::default();
        let bell = Trigger::new();
        let prepare = Transform::new();
        let retry = Transform::new();
        let done = Sink::new();
        ring.out_data -> rings.in_a;
        retry.out_data -> rings.in_b;
        rings.out_data -> bell.in_trigger;
        job.out_data -> prepare.in_data;
        prepare.out_data -> bell.in_data;
        bell.out_lost -> retry.in_data;
        bell.out_data -> done.in_data;
    };
    assert_eq!(net, example("wcp23-transient-trigger.cm"));
}

#[test]
fn cancelling_discriminator_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-29-cancelling-discriminator";
        let src = Source::new("x");
        let split = Fork::new(3).unwrap();
        let a = Transform::new();
        let b = Transform::new();
        let c = Transform::new();
        let first = Join::partial(3, 1).unwrap().cancelling(["a", "b", "c"]);
        let out = Sink::new();
        src.out_data -> split.in_data;
        split.out_a -> a.in_data;
        split.out_b -> b.in_data;
        split.out_c -> c.in_data;
        a.out_data -> first.in_a;
        b.out_data -> first.in_b;
        c.out_data -> first.in_c;
        first.out_data -> out.in_data;
    };
    assert_eq!(net, example("wcp29-cancelling-discriminator.cm"));
}

#[test]
fn thread_merge_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-41-thread-merge";
        let src = Source::new("x");
        let threads = ThreadSplit::new(3);
        let work = Transform::new();
        let one = ThreadMerge::new(3);
        let out = Sink::new();
        src.out_data -> threads.in_data;
        threads.out_data -> work.in_data;
        work.out_data -> one.in_data;
        one.out_data -> out.in_data;
    };
    assert_eq!(net, example("wcp41-thread-merge.cm"));
}

#[test]
fn explicit_termination_in_pipeline_is_the_cm_example() {
    let net = pipeline! {
        name = "wcp-43-explicit-termination";
        let start = Source::new("case");
        let split = Fork::default();
        let quick = Transform::new();
        let end = Terminate::new();
        let long_1 = Transform::new();
        let long_2 = Transform::new();
        let long_3 = Transform::new();
        let report = Sink::new();
        start.out_data -> split.in_data;
        split.out_a -> quick.in_data;
        quick.out_data -> end.in_data;
        split.out_b -> long_1.in_data;
        long_1.out_data -> long_2.in_data;
        long_2.out_data -> long_3.in_data;
        long_3.out_data -> report.in_data;
    };
    assert_eq!(net, example("wcp43-explicit-termination.cm"));
}

#[test]
fn map_in_pipeline_runs_like_the_cm_example() {
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp/sub/task.cm");
    let net = pipeline! {
        name = "wcp-13-mi-design-time";
        let items = Const::new(serde_json::json!([1, 2, 3]));
        let each = Map::load(&task).unwrap();
        let out = Sink::new();
        items.out_data -> each.in_items;
        each.out_results -> out.in_data;
    };
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let mut cm = Cvm::new(example("wcp13-mi-design-time.cm"));
    cm.run().unwrap();
    assert_eq!(
        cvm.received("out")[0].to_json(),
        cm.received("out")[0].to_json()
    );
}

#[test]
fn a_typed_subnet_and_a_counter_connect_in_pipeline() {
    cameleon::boundary! {
        struct Task {
            inputs { in_item: DataJSON }
            outputs { out_result: DataJSON }
        }
    }
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp/sub/task.cm");
    let net = pipeline! {
        name = "typed";
        let n = Const::new(serde_json::json!(1));
        let once = Subnet::<Task>::load_typed(&task).unwrap();
        let again = Counter::new();
        let out = Sink::new();
        n.out_data -> once.in_item;
        once.out_result -> again.in_data;
        again.out_data -> out.in_data;
    };
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), serde_json::json!(3));
}
