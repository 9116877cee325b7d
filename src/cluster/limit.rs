//! A client-side token bucket in front of every request, as client-go's
//! `flowcontrol.NewTokenBucketRateLimiter` (QPS and burst) does for kubectl
//! and helm. Hand-written because it is a dozen lines over `tokio::time` and
//! works for any `kube::Client`, including one handed in by a test, where a
//! tower layer would have to be part of client construction.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// Requests per second and burst. The default is kubectl's 50 QPS (its
/// genericclioptions default since 1.27) with helm's `--burst-limit` of 100:
/// client-go's bare 5/10 would make a kube-prometheus-stack install (a few
/// hundred requests) take a minute of pure waiting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    pub qps: f64,
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            qps: 50.0,
            burst: 100,
        }
    }
}

/// The bucket: `burst` tokens, refilled at `qps` per second.
pub struct TokenBucket {
    limit: RateLimit,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    pub fn new(limit: RateLimit) -> TokenBucket {
        TokenBucket {
            limit,
            state: Mutex::new((f64::from(limit.burst), Instant::now())),
        }
    }

    /// Take one token, sleeping until one is there. A non-positive QPS means
    /// no limit.
    pub async fn acquire(&self) {
        if self.limit.qps <= 0.0 {
            return;
        }
        let mut st = self.state.lock().await;
        let now = Instant::now();
        let refill = now.duration_since(st.1).as_secs_f64() * self.limit.qps;
        st.0 = (st.0 + refill).min(f64::from(self.limit.burst.max(1)));
        st.1 = now;
        if st.0 < 1.0 {
            let wait = (1.0 - st.0) / self.limit.qps;
            tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            st.0 = 1.0;
            st.1 = Instant::now();
        }
        st.0 -= 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn burst_then_qps() {
        let b = TokenBucket::new(RateLimit {
            qps: 10.0,
            burst: 3,
        });
        let start = Instant::now();
        for _ in 0..3 {
            b.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(1));
        // Three more tokens at 10/s take about 300 ms.
        for _ in 0..3 {
            b.acquire().await;
        }
        let e = start.elapsed();
        assert!(
            e >= Duration::from_millis(290) && e < Duration::from_millis(400),
            "{e:?}"
        );
    }
}
