//! Helper threads for rendering (template parsing, manifest heads, a big
//! schema check): a bounded [`Pool`] that the caller owns and sizes, that
//! renders on a thread find through [`Pool::enter`], and that joins its
//! threads when dropped.
//!
//! The library starts no thread on its own: with no pool entered, a render
//! runs on the calling thread alone ([`cores`] is 1). The CLI enters one
//! pool for its whole run, sized to the CPUs its affinity mask allows; a
//! long-running process sizes its pool with [`Pool::for_this_process`],
//! which honours a cgroup CPU quota (a pod limited to 500m gets no helper).
//! A helper that finished a job waits for the next one (starting a thread
//! costs the starting thread 60-130 µs, and a render wants helpers several
//! times), sleeping on a condition variable: it never spins, and nothing
//! here touches CPU affinity or the allocator's settings.
//!
//! The engine learns the same budget for its own parallel work (RSA key
//! generation's scoped threads) through `engine::threads`, which
//! [`Pool::enter`] sets for its call.
//!
//! What only pays off in a process that renders once and exits (shaping
//! glibc's heap ahead of a render, see `chart::render`) is asked for with
//! [`Pool::for_one_shot_process`] and is off otherwise.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};

/// At most this many threads in all; parsing stops scaling well before.
const MAX_THREADS: usize = 8;

/// Stack of every helper thread, kept or scoped: the YAML loader and the
/// values code recurse per nesting level, like the main thread (which has a
/// large stack); the size is address space, not memory.
const HELPER_STACK: usize = 256 << 20;

/// A job for a helper thread.
type Job = Box<dyn FnOnce() + Send>;

/// A bounded set of helper threads (see the module comment).
pub struct Pool {
    shared: Arc<Shared>,
    size: usize,
    one_shot: bool,
}

struct Shared {
    state: Mutex<HelperState>,
    job_queued: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Default)]
struct HelperState {
    jobs: VecDeque<Job>,
    /// Helpers without a job and not yet promised one: each queued job is
    /// promised to a free helper, or to the busy ones for when their jobs
    /// end, or else a new thread starts for it (while the pool has room).
    free: usize,
    /// Helpers running a job.
    busy: usize,
    /// Jobs promised to busy helpers (possibly several to one): a helper
    /// whose job ends takes one of these before it counts as free.
    owed: usize,
    /// The pool is being dropped: helpers end once the queue is empty.
    closing: bool,
}

impl Pool {
    /// A pool for renders that use at most `size` threads in all, the
    /// calling thread included (so `size - 1` helpers; 0 or 1: none).
    pub fn new(size: usize) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                state: Mutex::new(HelperState::default()),
                job_queued: Condvar::new(),
                threads: Mutex::new(Vec::new()),
            }),
            size: size.clamp(1, MAX_THREADS),
            one_shot: false,
        }
    }

    /// A pool sized to the CPUs this process may use, its cgroup CPU quota
    /// included (`std::thread::available_parallelism`), for a process that
    /// renders again and again beside other work.
    pub fn for_this_process() -> Pool {
        Pool::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Marks the pool as serving a process that renders once and exits:
    /// renders may then shape the process's heap for speed in ways a
    /// long-running process must not.
    pub fn for_one_shot_process(mut self) -> Pool {
        self.one_shot = true;
        self
    }

    /// Threads a render may use, the calling one included.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs `f` with this pool serving every render on this thread.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let entered = Entered {
            shared: self.shared.clone(),
            size: self.size,
            one_shot: self.one_shot,
        };
        let previous = CURRENT.with(|c| c.replace(Some(entered)));
        // Restored even if `f` panics.
        struct Restore(Option<Entered>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        // The engine's own parallel work (RSA key generation) gets the same
        // budget as the render's helpers.
        crate::engine::threads::with_threads(self.size, f)
    }
}

impl Drop for Pool {
    /// Lets the helpers finish what was queued, then joins them.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.job_queued.notify_all();
        let threads = std::mem::take(
            &mut *self
                .shared
                .threads
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for t in threads {
            let _ = t.join();
        }
    }
}

/// The pool entered on this thread.
#[derive(Clone)]
struct Entered {
    shared: Arc<Shared>,
    size: usize,
    one_shot: bool,
}

thread_local! {
    static CURRENT: RefCell<Option<Entered>> = const { RefCell::new(None) };
}

fn current() -> Option<Entered> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Threads a render on this thread may use (1 with no pool entered).
pub(crate) fn cores() -> usize {
    current().map_or(1, |p| p.size)
}

/// Whether the entered pool serves a process that renders once and exits.
pub(crate) fn one_shot_process() -> bool {
    current().is_some_and(|p| p.one_shot)
}

/// What a job handed to a helper hands back.
pub(crate) struct Pending<T>(mpsc::Receiver<std::thread::Result<T>>);

impl<T> Pending<T> {
    /// Wait for the job's result; `Err` carries its panic, as
    /// [`JoinHandle::join`] would.
    pub(crate) fn wait(self) -> std::thread::Result<T> {
        self.0
            .recv()
            .unwrap_or_else(|_| Err(Box::new("helper thread ended without a result")))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HelperState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `f` to a helper: a free one, else (with `after_busy`, or when
    /// the pool has no room for another thread) the first busy one to end
    /// its job, else a new thread.
    fn run<T, F>(
        self: &Arc<Self>,
        max_helpers: usize,
        after_busy: bool,
        f: F,
    ) -> std::io::Result<Pending<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let me = self.clone();
        let job: Job = Box::new(move || {
            // Caught to be handed over; the panic hook has already reported it.
            let result = std::panic::catch_unwind(AssertUnwindSafe(f));
            // Free again before the result is seen, so that a job the caller
            // queues next finds this helper rather than starting another.
            let mut st = me.lock();
            st.busy -= 1;
            if st.owed > 0 {
                st.owed -= 1;
            } else {
                st.free += 1;
            }
            drop(st);
            let _ = tx.send(result);
        });
        let mut st = self.lock();
        let full = st.free + st.busy >= max_helpers;
        let promised = if st.free > 0 {
            st.free -= 1;
            true
        } else if (after_busy || full) && st.busy > 0 {
            st.owed += 1;
            true
        } else {
            false
        };
        if promised {
            st.jobs.push_back(job);
            drop(st);
            self.job_queued.notify_one();
            return Ok(Pending(rx));
        }
        st.busy += 1;
        drop(st);
        let me = self.clone();
        let started = Builder::new()
            .name("antiopa-render".into())
            .stack_size(HELPER_STACK)
            .spawn(move || {
                job();
                me.serve()
            });
        match started {
            Ok(handle) => {
                self.threads
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(handle);
                Ok(Pending(rx))
            }
            Err(e) => {
                self.lock().busy -= 1;
                Err(e)
            }
        }
    }

    /// Run the jobs queued for this thread until the pool closes.
    fn serve(&self) {
        loop {
            let job = {
                let mut st = self.lock();
                loop {
                    if let Some(job) = st.jobs.pop_front() {
                        st.busy += 1;
                        break job;
                    }
                    if st.closing {
                        return;
                    }
                    st = self
                        .job_queued
                        .wait(st)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            job();
        }
    }
}

/// Run `f` on a helper of the entered pool and hand its result over
/// through [`Pending::wait`]; `Err` when there is no pool (or no thread
/// could be started): the caller then does the work itself.
pub(crate) fn spawn_detached<T, F>(f: F) -> std::io::Result<Pending<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    run(false, f)
}

/// [`spawn_detached`], except that with no helper free but one busy, `f`
/// waits for the busy helpers rather than starting a thread: for work that
/// is not urgent while the other cores are busy anyway (a schema check and
/// manifest heads while templates are still being parsed).
pub(crate) fn spawn_detached_next<T, F>(f: F) -> std::io::Result<Pending<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    run(true, f)
}

fn run<T, F>(after_busy: bool, f: F) -> std::io::Result<Pending<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match current() {
        Some(p) if p.size > 1 => p.shared.run(p.size - 1, after_busy, f),
        _ => Err(std::io::Error::other("no render helpers")),
    }
}

/// Whether the entered pool has a helper thread already: a job handed to
/// one then costs the caller a lock and a queue entry, not a thread start.
pub(crate) fn helpers_started() -> bool {
    current().is_some_and(|p| {
        let st = p.shared.lock();
        st.busy + st.free > 0
    })
}

/// A thread of `scope` with a helper's stack.
pub(crate) fn spawn_scoped<'scope, T, F>(
    scope: &'scope Scope<'scope, '_>,
    f: F,
) -> std::io::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    Builder::new()
        .name("antiopa-render".into())
        .stack_size(HELPER_STACK)
        .spawn_scoped(scope, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running thread's id.
    fn id() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[test]
    fn without_a_pool_nothing_starts() {
        assert_eq!(cores(), 1);
        assert!(spawn_detached(id).is_err());
        assert!(!helpers_started());
        assert!(!one_shot_process());
    }

    #[test]
    fn helpers_hand_back_results_and_panics() {
        let pool = Pool::new(2);
        pool.enter(|| {
            assert_eq!(cores(), 2);
            assert_eq!(
                crate::engine::threads::threads(),
                2,
                "the engine's budget too"
            );
            let p = spawn_detached(|| -> u8 { panic!("boom") }).unwrap();
            let panic = p.wait().unwrap_err();
            assert_eq!(panic.downcast_ref::<&str>(), Some(&"boom"));
            let other = spawn_detached(id).unwrap().wait().unwrap();
            assert_ne!(other, id());
        });
        assert_eq!(cores(), 1, "entered only for the call");
        assert_eq!(crate::engine::threads::threads(), 1);
    }

    /// A pool of 2 has one helper: a job queued while it is busy waits for
    /// it instead of starting a second thread, and jobs run in the order
    /// they were queued.
    #[test]
    fn a_full_pool_queues_jobs_for_its_helpers() {
        let pool = Pool::new(2);
        pool.enter(|| {
            let (release, hold) = mpsc::channel::<()>();
            let (started, running) = mpsc::channel::<()>();
            let busy = spawn_detached(move || {
                started.send(()).unwrap();
                (hold.recv().is_ok(), id())
            })
            .unwrap();
            running.recv().unwrap();
            let (order_tx, order) = mpsc::channel();
            let (tx1, tx2) = (order_tx.clone(), order_tx);
            let second = spawn_detached(move || tx1.send((1, id())).unwrap()).unwrap();
            let third = spawn_detached_next(move || tx2.send((2, id())).unwrap()).unwrap();
            assert_eq!(pool.shared.lock().owed, 2);
            release.send(()).unwrap();
            let (_, helper) = busy.wait().unwrap();
            second.wait().unwrap();
            third.wait().unwrap();
            assert_eq!(
                order.try_iter().collect::<Vec<_>>(),
                [(1, helper), (2, helper)]
            );
        });
        assert_eq!(pool.shared.threads.lock().unwrap().len(), 1);
    }

    /// Dropping the pool ends and joins its threads.
    #[test]
    fn dropping_the_pool_joins_its_threads() {
        let pool = Pool::new(4);
        let (tx, rx) = mpsc::channel();
        pool.enter(|| {
            for _ in 0..3 {
                let tx = tx.clone();
                spawn_detached(move || tx.send(std::thread::current().name().map(String::from)))
                    .unwrap()
                    .wait()
                    .unwrap()
                    .unwrap();
            }
        });
        let shared = pool.shared.clone();
        drop(pool);
        assert!(shared.threads.lock().unwrap().is_empty());
        assert_eq!(Arc::strong_count(&shared), 1, "every helper ended");
        assert_eq!(rx.recv().unwrap().as_deref(), Some("antiopa-render"));
    }
}
