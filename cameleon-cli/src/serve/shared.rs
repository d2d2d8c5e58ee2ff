//! What the handlers share: the session behind its mutex — locked only on tokio's blocking
//! pool, where the engine runs — and what was last published of it, which the async side reads
//! at once. So a firing that takes 20 s holds the engine, never a server worker: the state,
//! the page's files, the source and the drawing answer meanwhile, and Pause is a flag.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::broadcast;

use super::error::ApiError;
use super::session::{Drawing, Outbox, Served, Session, Wires};
use super::stream::Message;
use super::view::{SourceView, StateView};

/// What the async side reads without the engine: the last state, source and drawing.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    pub(crate) state: Arc<StateView>,
    pub(crate) source: Arc<SourceView>,
    pub(crate) drawing: Arc<Option<Drawing>>,
}

/// What the handlers share.
pub(crate) struct Shared {
    /// Locked on the blocking pool only ([`read`](Self::read), [`change`](Self::change),
    /// the run's driver): never on a server worker.
    session: Mutex<Session>,
    /// The served file, for checking a text without the engine.
    pub(super) served: Served,
    published: Mutex<Published>,
    pub(super) outbox: Outbox,
    pause: Arc<AtomicBool>,
    pub(super) tx: broadcast::Sender<Arc<Vec<Message>>>,
    /// Something changed since the last flush: send the state.
    pub(super) dirty: Arc<AtomicBool>,
    /// The operators firing now.
    firing: Arc<Mutex<Vec<String>>>,
    /// The installed engine's cancellation token.
    cancel: Arc<Mutex<Option<cameleon::CancelToken>>>,
    /// Changes under way in the engine (the state's `busy`).
    busy: AtomicUsize,
    /// Messages sent so far.
    pub(super) sent: AtomicU64,
}

impl Shared {
    /// Shares `session`, opened with `wires`, and publishes its first state.
    pub(crate) fn new(session: Session, served: Served, wires: Wires) -> Shared {
        let (tx, _) = broadcast::channel(1024);
        let published = Published {
            state: Arc::new(session.state()),
            source: session.source(),
            drawing: session.drawing(),
        };
        Shared {
            session: Mutex::new(session),
            served,
            published: Mutex::new(published),
            outbox: wires.outbox,
            pause: wires.pause,
            tx,
            dirty: {
                wires.dirty.store(true, Ordering::SeqCst);
                wires.dirty
            },
            firing: wires.firing,
            cancel: wires.cancel,
            busy: AtomicUsize::new(0),
            sent: AtomicU64::new(0),
        }
    }

    /// The session, on the blocking pool (the engine may hold it for as long as a firing
    /// takes).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What was last published.
    pub(crate) fn published(&self) -> Published {
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The last published state, saying what is firing now and whether a change is under
    /// way.
    pub(crate) fn state_now(&self) -> StateView {
        let mut state = (*self.published().state).clone();
        state.firing = self
            .firing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        state.busy = self.busy.load(Ordering::SeqCst) > 0 || !state.firing.is_empty();
        state
    }

    /// Publishes `session` after a change: its events go to the outbox, then its state (and
    /// source and drawing) to readers; the next flush sends both.
    pub(crate) fn publish(&self, session: &Session) -> Arc<StateView> {
        session.hand_off();
        let state = Arc::new(session.state());
        {
            let mut p = self
                .published
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            p.state = Arc::clone(&state);
            p.source = session.source();
            p.drawing = session.drawing();
        }
        self.mark_dirty();
        state
    }

    /// Something changed: the next flush sends the state.
    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::SeqCst);
    }

    /// Asks the run in progress, if any, to stop before its next step; answers at once.
    pub(crate) fn pause(&self) {
        self.pause.store(true, Ordering::SeqCst);
    }

    /// Cancels the step in flight, if any (Reset): its firings are dropped — a streaming
    /// model request is closed — and nothing of the step is recorded.
    pub(crate) fn cancel_step(&self) {
        if let Some(t) = &*self.cancel.lock().unwrap_or_else(PoisonError::into_inner) {
            t.cancel();
        }
    }

    /// Runs `f` in tokio's blocking pool. `Err`: the task died.
    pub(crate) async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Shared) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || f(&shared))
            .await
            .map_err(|e| ApiError::internal(format!("the engine task failed: {e}")))
    }

    /// Reads the session on the blocking pool (it waits for a step in progress).
    pub(crate) async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Session) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        self.blocking(move |s| f(&s.lock())).await
    }

    /// Changes the session on the blocking pool — the state says `busy` meanwhile — then
    /// publishes it: the new state, or `f`'s refusal.
    pub(crate) async fn change(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Session) -> Result<(), ApiError> + Send + 'static,
    ) -> Result<Arc<StateView>, ApiError> {
        self.blocking(move |s| {
            let _busy = s.busy();
            let mut session = s.lock();
            let r = f(&mut session);
            let state = s.publish(&session);
            r.map(|()| state)
        })
        .await?
    }

    /// Marks a change under way until the guard drops.
    pub(crate) fn busy(&self) -> Busy<'_> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.mark_dirty();
        Busy(self)
    }
}

/// A change under way in the engine ([`Shared::busy`]).
pub(crate) struct Busy<'a>(&'a Shared);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.mark_dirty();
    }
}
