//! `schedule` bindings in `antiopa run`: the next fire time of every
//! schedule binding of the global hooks and of the enabled modules' hooks,
//! and which hook runs are due. The converge loop sleeps until the earliest
//! ([`Schedules::next_due`]) and runs what [`Schedules::take_due`] hands it.
//!
//! As robfig/cron (shell-operator's scheduler) does, a binding's next time
//! is computed from the time it fired, so fires missed while the operator
//! was busy are skipped, not caught up. Bindings of one hook due at once
//! (in one queue) are handed over together, to run as one hook run with
//! one context each (the queue compacts a hook's consecutive tasks the
//! same way, [`super::queue`]). No I/O here: the
//! times are given, so this is tested without a clock.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::hooks::config::ScheduleBinding;
use crate::module::ScheduleBindingRef;

/// One binding and when it fires next (`None`: never again).
struct Entry {
    binding: ScheduleBindingRef,
    next: Option<DateTime<Utc>>,
}

impl Entry {
    fn same(&self, b: &ScheduleBindingRef) -> bool {
        let a = &self.binding;
        a.module == b.module
            && a.hook == b.hook
            && a.index == b.index
            && a.binding.crontab == b.binding.crontab
    }
}

/// One hook run due: the hook and the schedule bindings of it that fired
/// (of one queue).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Firing {
    /// `None`: a global hook.
    pub module: Option<String>,
    pub hook: String,
    /// The bindings' `queue`.
    pub queue: String,
    /// The bindings that fired, in `indexes` order.
    pub bindings: Vec<ScheduleBinding>,
    /// Indexes in the hook's `schedule` list, in order.
    pub indexes: Vec<usize>,
    /// Binding names, for logs.
    pub names: Vec<String>,
    /// Every binding that fired has `allowFailure`: a failure is logged
    /// only.
    pub allow_failure: bool,
}

/// The schedule bindings in force and their next fire times.
#[derive(Default)]
pub(crate) struct Schedules {
    entries: Vec<Entry>,
}

impl Schedules {
    /// Takes the bindings in force now (after a converge: the global
    /// hooks' and the enabled modules'). A binding known before (same
    /// hook, index and crontab) keeps its next time; a new one starts
    /// counting from `now`; one no longer given stops.
    pub fn set(&mut self, bindings: Vec<ScheduleBindingRef>, now: DateTime<Utc>) {
        let mut old = std::mem::take(&mut self.entries);
        for b in bindings {
            let entry = match old.iter().position(|e| e.same(&b)) {
                Some(i) => old.swap_remove(i),
                None => Entry {
                    next: b.binding.crontab.next_after(now),
                    binding: b,
                },
            };
            self.entries.push(entry);
        }
    }

    /// Stops every binding (the hooks are being loaded afresh).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The earliest next fire time.
    pub fn next_due(&self) -> Option<DateTime<Utc>> {
        self.entries.iter().filter_map(|e| e.next).min()
    }

    /// The hook runs due at `now`, one per hook in the order the bindings
    /// were given; each binding that fired gets its next time after `now`.
    pub fn take_due(&mut self, now: DateTime<Utc>) -> Vec<Firing> {
        let mut out: Vec<Firing> = Vec::new();
        for e in &mut self.entries {
            if e.next.is_none_or(|t| t > now) {
                continue;
            }
            e.next = e.binding.binding.crontab.next_after(now);
            let b = &e.binding;
            match out
                .iter_mut()
                .find(|f| f.module == b.module && f.hook == b.hook && f.queue == b.binding.queue)
            {
                Some(f) => {
                    f.indexes.push(b.index);
                    f.names.push(b.binding.name.clone());
                    f.bindings.push(b.binding.clone());
                    f.allow_failure &= b.binding.allow_failure;
                }
                None => out.push(Firing {
                    module: b.module.clone(),
                    hook: b.hook.clone(),
                    queue: b.binding.queue.clone(),
                    bindings: vec![b.binding.clone()],
                    indexes: vec![b.index],
                    names: vec![b.binding.name.clone()],
                    allow_failure: b.binding.allow_failure,
                }),
            }
        }
        for f in &mut out {
            let mut all: Vec<(usize, String, ScheduleBinding)> = std::mem::take(&mut f.indexes)
                .into_iter()
                .zip(std::mem::take(&mut f.names))
                .zip(std::mem::take(&mut f.bindings))
                .map(|((i, n), b)| (i, n, b))
                .collect();
            all.sort_by_key(|(i, _, _)| *i);
            for (i, n, b) in all {
                f.indexes.push(i);
                f.names.push(n);
                f.bindings.push(b);
            }
        }
        out
    }
}

/// The monotonic instant of wall-clock time `t`, given the same moment in
/// both clocks (a time already past is `now`).
pub(crate) fn instant_at(t: DateTime<Utc>, now: DateTime<Utc>, now_instant: Instant) -> Instant {
    now_instant + (t - now).to_std().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::ScheduleBinding;
    use crate::hooks::cron::Crontab;
    use chrono::TimeZone;

    fn binding(module: Option<&str>, hook: &str, index: usize, spec: &str) -> ScheduleBindingRef {
        ScheduleBindingRef {
            module: module.map(str::to_string),
            hook: hook.into(),
            index,
            binding: ScheduleBinding {
                name: format!("b{index}"),
                crontab: Crontab::parse(spec).unwrap(),
                allow_failure: index == 1,
                queue: "main".into(),
                include_snapshots_from: Vec::new(),
                group: None,
            },
        }
    }

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 5, 1, h, m, s).unwrap()
    }

    #[test]
    fn six_field_every_second_fires_each_second_and_skips_missed_ones() {
        let mut s = Schedules::default();
        s.set(
            vec![binding(Some("m"), "hooks/a", 0, "*/1 * * * * *")],
            at(10, 0, 0),
        );
        assert_eq!(s.next_due(), Some(at(10, 0, 1)));
        assert!(s.take_due(at(10, 0, 0)).is_empty());
        let due = s.take_due(at(10, 0, 1));
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].module.as_deref(), due[0].hook.as_str()),
            (Some("m"), "hooks/a")
        );
        assert_eq!(s.next_due(), Some(at(10, 0, 2)));
        // Busy for 5 s: one run, then the next second after now.
        assert_eq!(s.take_due(at(10, 0, 7)).len(), 1);
        assert_eq!(s.next_due(), Some(at(10, 0, 8)));
    }

    #[test]
    fn five_fields_every_and_tz_give_their_next_times() {
        let mut s = Schedules::default();
        s.set(
            vec![binding(None, "g", 0, "TZ=UTC */5 * * * *")],
            at(10, 2, 30),
        );
        assert_eq!(s.next_due(), Some(at(10, 5, 0)));
        s.set(vec![binding(None, "g", 0, "@every 90s")], at(10, 2, 30));
        assert_eq!(s.next_due(), Some(at(10, 4, 0)));
        // 12:00 in Berlin (CEST, UTC+2) is 10:00 UTC.
        s.set(
            vec![binding(None, "g", 0, "TZ=Europe/Berlin 0 0 12 * * *")],
            at(9, 0, 0),
        );
        assert_eq!(s.next_due(), Some(at(10, 0, 0)));
        s.set(vec![binding(None, "g", 0, "TZ=UTC @hourly")], at(9, 0, 0));
        assert_eq!(s.next_due(), Some(at(10, 0, 0)));
    }

    #[test]
    fn bindings_of_one_hook_due_together_are_one_run() {
        let mut s = Schedules::default();
        let mut other_queue = binding(Some("m"), "h", 2, "*/2 * * * * *");
        other_queue.binding.queue = "q".into();
        s.set(
            vec![
                binding(Some("m"), "h", 1, "*/2 * * * * *"),
                binding(Some("m"), "h", 0, "*/2 * * * * *"),
                binding(Some("n"), "h", 0, "*/3 * * * * *"),
                other_queue,
            ],
            at(10, 0, 1),
        );
        let due: Vec<_> = s
            .take_due(at(10, 0, 2))
            .into_iter()
            .map(|f| {
                let names: Vec<String> = f.bindings.iter().map(|b| b.name.clone()).collect();
                (
                    f.module,
                    f.hook,
                    f.queue,
                    f.indexes,
                    f.names,
                    names,
                    f.allow_failure,
                )
            })
            .collect();
        let s2 = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            due,
            vec![
                (
                    Some("m".into()),
                    "h".to_string(),
                    "main".to_string(),
                    vec![0, 1],
                    s2(&["b0", "b1"]),
                    s2(&["b0", "b1"]),
                    false
                ),
                (
                    Some("m".into()),
                    "h".to_string(),
                    "q".to_string(),
                    vec![2],
                    s2(&["b2"]),
                    s2(&["b2"]),
                    false
                ),
            ]
        );
        assert_eq!(s.take_due(at(10, 0, 3))[0].module.as_deref(), Some("n"));
    }

    #[test]
    fn set_keeps_known_bindings_and_drops_gone_ones() {
        let mut s = Schedules::default();
        s.set(vec![binding(Some("m"), "h", 0, "@every 10s")], at(10, 0, 0));
        // A later converge: m's binding keeps its time, n's starts now.
        s.set(
            vec![
                binding(Some("m"), "h", 0, "@every 10s"),
                binding(Some("n"), "h", 0, "@every 10s"),
            ],
            at(10, 0, 5),
        );
        assert_eq!(s.take_due(at(10, 0, 10)).len(), 1);
        assert_eq!(s.next_due(), Some(at(10, 0, 15)));
        // m disabled: its binding stops.
        s.set(vec![], at(10, 0, 11));
        assert_eq!((s.len(), s.next_due()), (0, None));
    }

    #[test]
    fn instants_follow_wall_clock_offsets() {
        let now = Instant::now();
        assert_eq!(
            instant_at(at(10, 0, 3), at(10, 0, 1), now),
            now + Duration::from_secs(2)
        );
        assert_eq!(instant_at(at(10, 0, 0), at(10, 0, 1), now), now);
    }
}
