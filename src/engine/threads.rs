//! How many threads the engine's own parallel work may use: today only RSA
//! key generation (`genPrivateKey "rsa"`, `genCA`, `genSignedCert` …), which
//! tests prime candidates side by side.
//!
//! The budget belongs to the caller, never to the engine: it is 1 (the
//! calling thread alone, no thread started) unless the caller runs the
//! render inside [`with_threads`]. The chart layer does that while one of
//! its worker pools is entered (`chart::workers::Pool::enter`), with the
//! pool's size, so the engine uses no more cores than the process gave its
//! renders: one in a pod limited to 500m, the CPUs of the affinity mask in
//! the CLI. Threads the engine starts are scoped to the one function call
//! that needs them and joined before it returns.

use std::cell::Cell;

thread_local! {
    static THREADS: Cell<usize> = const { Cell::new(1) };
}

/// Runs `f` with a budget of `n` threads (the calling one included; 0
/// counts as 1) for the engine's work on this thread, restoring the
/// previous budget afterwards, also when `f` panics.
pub fn with_threads<R>(n: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREADS.with(|t| t.set(self.0));
        }
    }
    let _restore = Restore(THREADS.with(|t| t.replace(n.max(1))));
    f()
}

/// Threads the engine may use on this thread now (1 outside [`with_threads`]).
pub fn threads() -> usize {
    THREADS.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_one_unless_the_caller_sets_it_and_is_restored() {
        assert_eq!(threads(), 1);
        with_threads(4, || {
            assert_eq!(threads(), 4);
            with_threads(0, || assert_eq!(threads(), 1));
            assert_eq!(threads(), 4);
            let other = std::thread::spawn(threads).join().unwrap();
            assert_eq!(other, 1, "per thread, not process-wide");
            let panicked = std::panic::catch_unwind(|| with_threads(2, || panic!("boom")));
            assert!(panicked.is_err());
            assert_eq!(threads(), 4);
        });
        assert_eq!(threads(), 1);
    }
}
