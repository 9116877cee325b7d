//! addon-operator's retry delay for a failed task (shell-operator
//! `pkg/utils/exponential_backoff/delay.go`): 5 s, then 5 s plus a doubling
//! second (6, 7, 9, 13, 21 s …) capped at 32 s, each with up to a second of
//! jitter so that many modules failing together do not retry in step.

use std::time::Duration;

/// The first retry's delay.
pub const INITIAL: Duration = Duration::from_secs(5);
/// No retry waits longer.
pub const MAX: Duration = Duration::from_secs(32);

/// The delay before the retry that follows the `failures`-th failure in a
/// row (1 for the first), without jitter.
pub fn delay(failures: u32) -> Duration {
    let extra = match failures {
        0 | 1 => 0,
        // 2^(n-2) seconds; past 2^5 the cap is reached anyway.
        n => 1u64 << (n - 2).min(6),
    };
    (INITIAL + Duration::from_secs(extra)).min(MAX)
}

/// [`delay`] plus up to a second of jitter.
pub fn delay_with_jitter(failures: u32) -> Duration {
    delay(failures) + Duration::from_millis(rand::random_range(0..1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_follow_addon_operator() {
        let secs: Vec<u64> = (1..=9).map(|n| delay(n).as_secs()).collect();
        assert_eq!(secs, [5, 6, 7, 9, 13, 21, 32, 32, 32]);
        let d = delay_with_jitter(1);
        assert!(
            d >= INITIAL && d < INITIAL + Duration::from_secs(1),
            "{d:?}"
        );
    }
}
