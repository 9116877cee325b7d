//! The function table templates call into: Go's builtins, Sprig, and
//! whatever the embedder (the chart renderer) adds, such as Helm's `toYaml`.
//!
//! Every function is a plain Rust `fn` with a declared Go signature
//! ([`Param`]s). The evaluator converts and checks arguments against that
//! signature in one place, with Go's rules and error texts (an untyped
//! constant converts, a `float64` never becomes an `int`, nil into a
//! `string` is "invalid value; expected string"), so implementations receive
//! values of the declared types and only do their own work.

pub mod builtins;
pub mod sprig;

use foldhash::HashMap;
use std::cell::{Cell, RefCell};

use super::limits::{Budget, LimitHit, Limits};
use super::value::Value;

/// The Go type of one parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// `interface {}`: any value, nil included.
    Any,
    /// `string`, as text: a byte string that is not UTF-8 arrives with
    /// each invalid byte as U+FFFD, which is what Go functions that decode
    /// runes (`strings.ToUpper`, `for range s`, …) see.
    Str,
    /// `string`, as bytes: the function receives a `Value::Str` or a
    /// `Value::BStr` unchanged. For functions that work on bytes and so
    /// keep invalid bytes (`trunc`, `b64enc`, `sha256sum`, `replace`, …).
    RawStr,
    /// `int`
    Int,
    /// `int64`
    Int64,
    /// `float64`
    Float,
    /// `bool`
    Bool,
    /// `map[string]interface {}` (a `chartutil.Values` is assignable too)
    Map,
    /// `[]interface {}`
    List,
}

impl Param {
    /// The Go spelling, for error messages.
    pub fn go_name(self) -> &'static str {
        match self {
            Param::Any => "interface {}",
            Param::Str | Param::RawStr => "string",
            Param::Int => "int",
            Param::Int64 => "int64",
            Param::Float => "float64",
            Param::Bool => "bool",
            Param::Map => "map[string]interface {}",
            Param::List => "[]interface {}",
        }
    }
}

/// What a function returns on failure: the message Go's function would have
/// returned as `error` (or panicked with). The evaluator wraps it as
/// `error calling NAME: MESSAGE`.
pub type FuncResult = Result<Value, String>;

/// A function implementation. Arguments have already been converted to the
/// declared parameter types (variadic ones included).
pub type FuncImpl = fn(&Env, &[Value]) -> FuncResult;

/// One entry of the function table.
#[derive(Clone, Copy)]
pub struct FuncDef {
    pub name: &'static str,
    /// Fixed parameters.
    pub params: &'static [Param],
    /// Type of the trailing `...T` parameter, if the function is variadic.
    pub variadic: Option<Param>,
    pub imp: FuncImpl,
}

/// The function table of a template set, looked up at parse time (an
/// unknown function is a parse error, as in Go) and at execution.
#[derive(Clone, Default)]
pub struct FuncMap {
    funcs: HashMap<&'static str, &'static FuncDef>,
}

impl FuncMap {
    /// Go's builtins plus every Sprig v3.3.0 function (`env` and `expandenv`
    /// included; Helm removes those two itself).
    pub fn standard() -> Self {
        // Sized for the ~250 functions up front: growing it rehashed the
        // entries on every run (29,000 instructions, 5 % of a small chart's).
        let mut m = FuncMap {
            funcs: HashMap::with_capacity_and_hasher(256, Default::default()),
        };
        builtins::register(&mut m);
        sprig::register(&mut m);
        m
    }
    /// Add or replace a function.
    pub fn insert(&mut self, def: &'static FuncDef) {
        self.funcs.insert(def.name, def);
    }
    pub fn remove(&mut self, name: &str) {
        self.funcs.remove(name);
    }
    pub fn get(&self, name: &str) -> Option<&'static FuncDef> {
        self.funcs.get(name).copied()
    }
    pub fn contains(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }
}

/// Where nondeterministic functions get their randomness and time. Real
/// randomness and the real clock by default; [`Env::reproducible`] fixes
/// both so that output is the same on every run (`--seed`/`--now`).
pub struct Env {
    /// Seeded from the OS on the first draw: most renders draw nothing, and
    /// seeding reads the OS's randomness and probes the CPU's features.
    rng: RefCell<Option<rand_chacha::ChaCha20Rng>>,
    /// `None` = the real clock.
    now: Option<chrono::DateTime<chrono::FixedOffset>>,
    /// Calls whose result is not a function of their arguments: every
    /// random draw and clock reading goes through [`Env::rng`] or
    /// [`Env::now`], which count them, and cluster lookups count
    /// themselves. `include` reuses only results of executions that made
    /// none.
    impure: Cell<u64>,
    /// The render's [`Limits`] and what it has used of them.
    budget: Budget,
}

impl Env {
    pub fn new() -> Self {
        Env {
            rng: RefCell::new(None),
            now: None,
            impure: Cell::new(0),
            budget: Budget::new(Limits::unlimited()),
        }
    }
    pub fn reproducible(seed: u64, now: chrono::DateTime<chrono::FixedOffset>) -> Self {
        let mut env = Env::new();
        env.seed(seed);
        env.set_now(Some(now));
        env
    }
    /// Draw from a generator seeded with `seed` (`--seed`).
    pub fn seed(&mut self, seed: u64) {
        use rand::SeedableRng;
        self.rng = RefCell::new(Some(rand_chacha::ChaCha20Rng::seed_from_u64(seed)));
    }
    /// A fixed clock (`--now`), or the real one.
    pub fn set_now(&mut self, now: Option<chrono::DateTime<chrono::FixedOffset>>) {
        self.now = now;
    }
    /// The random generator, for one draw.
    pub fn rng(&self) -> std::cell::RefMut<'_, rand_chacha::ChaCha20Rng> {
        use rand::SeedableRng;
        self.mark_impure();
        std::cell::RefMut::map(self.rng.borrow_mut(), |r| {
            // Seeded straight from the OS: `rand::rng()` would first build
            // and seed a thread generator of its own, probing the CPU again.
            r.get_or_insert_with(|| {
                rand_chacha::ChaCha20Rng::try_from_rng(&mut rand::rngs::SysRng)
                    .unwrap_or_else(|_| rand_chacha::ChaCha20Rng::from_rng(&mut rand::rng()))
            })
        })
    }
    /// The current time in the local zone (or the fixed time).
    pub fn now(&self) -> chrono::DateTime<chrono::FixedOffset> {
        self.mark_impure();
        self.now
            .unwrap_or_else(|| chrono::Local::now().fixed_offset())
    }
    /// Whether the clock is fixed (`--now`).
    pub fn clock_is_fixed(&self) -> bool {
        self.now.is_some()
    }
    /// Count a call whose result depends on more than its arguments. Such
    /// calls (key generation, bcrypt) can also be slow: the deadline is
    /// checked at the next step.
    pub fn mark_impure(&self) {
        self.impure.set(self.impure.get() + 1);
        self.budget.soon();
    }
    /// How many such calls were made so far.
    pub fn impure_calls(&self) -> u64 {
        self.impure.get()
    }
}

impl Env {
    /// Bound the renders done with this environment ([`Limits::default`]:
    /// unbounded, as Helm).
    pub fn set_limits(&mut self, limits: Limits) {
        self.budget = Budget::new(limits);
    }
    pub fn limits(&self) -> &Limits {
        self.budget.limits()
    }
    /// Start one render: output counted from zero, the deadline from now.
    /// (Without it the clock starts at the first check.)
    pub fn begin_render(&self) {
        self.budget.begin();
    }
    /// For functions that allocate in proportion to an argument: whether a
    /// result of `bytes` bytes stays within the output limit. The error is
    /// the limit's message.
    pub fn check_alloc(&self, bytes: u64) -> Result<(), String> {
        self.budget.fits(bytes).map_err(|e| e.to_string())
    }
    /// The most bytes one function result may hold (`u64::MAX`: no
    /// limit), for functions that check as they build.
    pub fn alloc_cap(&self) -> u64 {
        self.limits().max_output.unwrap_or(u64::MAX)
    }
    /// [`Env::check_alloc`] of `n` items of `item` bytes each.
    pub fn check_items(&self, n: u64, item: usize) -> Result<(), String> {
        self.check_alloc(n.saturating_mul(item as u64))
    }
    /// With an output limit, whether writing out `v` whole (`toJson`,
    /// `printf "%v"`) stays within it; see [`super::limits::printed_size_exceeds`].
    pub(crate) fn check_printed(&self, v: &Value) -> Result<(), LimitHit> {
        let cap = self.alloc_cap();
        if cap != u64::MAX
            && matches!(v, Value::List(_) | Value::Map(_))
            && super::limits::printed_size_exceeds(v, cap)
        {
            return Err(LimitHit::Output(cap));
        }
        Ok(())
    }
    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }
    /// The budget's error for a value of `bytes` bytes, if over the limit.
    pub(crate) fn fits(&self, bytes: u64) -> Result<(), LimitHit> {
        self.budget.fits(bytes)
    }
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}
