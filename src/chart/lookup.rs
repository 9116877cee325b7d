//! Helm's `lookup` function reading a cluster: the caller that renders for
//! a cluster (`antiopa apply`, `diff --live`, later the operator) hands a
//! [`Lookup`] to [`with_lookup`] for the duration of the render; without
//! one (`template`, `render`, offline `diff`) `lookup` returns an empty
//! map, as `helm template` does. The chart side stays free of any cluster
//! code: the provider is the caller's.
//!
//! Semantics as Helm's `pkg/engine/lookup_func.go`: a name gets that
//! object, an empty name lists the kind (in the namespace, or everywhere
//! for an empty namespace or a cluster-scoped kind), an object or kind that
//! is not there is an empty map. Unlike Helm, a lookup the caller may not
//! make (forbidden) is an empty map too, so that a chart renders the same
//! under least-privilege RBAC as it would find nothing.

use std::cell::RefCell;
use std::rc::Rc;

/// Reads what `lookup` asks for.
pub trait Lookup {
    /// The object (`name` non-empty) or the list (`name` empty) as the
    /// API server returns it, a list's items with their `apiVersion` and
    /// `kind`; an empty JSON object when absent or forbidden; `Err` for
    /// anything else (the render fails with it).
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<serde_json::Value, String>;
}

thread_local! {
    static PROVIDER: RefCell<Option<Rc<dyn Lookup>>> = const { RefCell::new(None) };
}

/// Runs `f` with `provider` answering every `lookup` of renders on this
/// thread (templates execute on the thread that renders).
pub fn with_lookup<R>(provider: Rc<dyn Lookup>, f: impl FnOnce() -> R) -> R {
    let previous = PROVIDER.with(|p| p.replace(Some(provider)));
    struct Restore(Option<Rc<dyn Lookup>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            PROVIDER.with(|p| *p.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    f()
}

/// The provider of the render running on this thread, if any.
pub(crate) fn current() -> Option<Rc<dyn Lookup>> {
    PROVIDER.with(|p| p.borrow().clone())
}
