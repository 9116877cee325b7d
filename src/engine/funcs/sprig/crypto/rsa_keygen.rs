//! RSA key generation that tests prime candidates on several threads and still
//! returns exactly the key `rsa::RsaPrivateKey::new` returns for the same
//! random stream, so `--seed` renders stay what they were.
//!
//! Why not another library: measured on this project's 2-core machine, a
//! 4096-bit key cost ~1.2 s of CPU with aws-lc-rs and ~1.9 s with OpenSSL 3
//! (`openssl genrsa`), against ~1.1 s with the `rsa` crate; neither can draw
//! from our seeded generator either. Nearly all the time goes into the
//! primality tests of candidates that turn out composite (~80 per 2048-bit
//! prime after the small-prime sieve), and those are independent of each
//! other, so they are what runs in parallel.
//!
//! How many threads: the caller's budget ([`crate::engine::threads`]; the
//! chart layer sets it to its worker pool's size, which honours a cgroup
//! CPU quota). The threads are scoped to one batch of candidates and joined
//! before the batch's result is taken; with a budget of 1 none is started.
//!
//! The candidate sequence is the `rsa` crate's own (crypto-primes' sieve,
//! fed by the caller's generator, which only the sieve draws from), each
//! candidate is tested with the same `is_prime` the crate uses, and of each
//! batch the *first* candidate in sequence order that passes is taken, so
//! the result does not depend on which thread finishes first.

use std::sync::atomic::{AtomicUsize, Ordering};

use crypto_primes::hazmat::{SetBits, SieveFactory, SmallFactorsSieveFactory};
use crypto_primes::{Flavor, is_prime};
use rsa::BoxedUint;
use rsa::rand_core::CryptoRng;
use rsa::traits::PublicKeyParts;

/// `rsa::RsaPrivateKey::new(rng, bits)` (two primes, e = 65537), with the
/// primality tests spread over the threads the caller allows the engine
/// ([`crate::engine::threads`]: the calling thread alone unless it set a
/// budget).
pub fn generate<R: CryptoRng + ?Sized>(
    rng: &mut R,
    bits: usize,
) -> Result<rsa::RsaPrivateKey, String> {
    generate_with_threads(rng, bits, crate::engine::threads::threads())
}

/// [`generate`] on `threads` threads (the result is the same for any count).
pub fn generate_with_threads<R: CryptoRng + ?Sized>(
    rng: &mut R,
    bits: usize,
    threads: usize,
) -> Result<rsa::RsaPrivateKey, String> {
    // The same bounds and loop as the crate's `new` and
    // `generate_multi_prime_key_with_exp` for two primes.
    if bits < rsa::RsaPublicKey::MIN_SIZE {
        return Err(rsa::Error::ModulusTooSmall.to_string());
    }
    let half = u32::try_from(bits / 2).map_err(|e| e.to_string())?;
    loop {
        let p = prime(rng, half, threads)?;
        let rest = u32::try_from(bits).map_err(|e| e.to_string())? - p.bits();
        let q = prime(rng, rest, threads)?;
        if p == q {
            continue;
        }
        // `from_primes` computes n, then d from Euler's totient, as key
        // generation does; it fails with `InvalidPrime` when e is not
        // invertible, where generation draws new primes.
        match rsa::RsaPrivateKey::from_primes(vec![p, q], BoxedUint::from(65537u32)) {
            Ok(key) if key.n().bits() as usize == bits => return Ok(key),
            Ok(_) | Err(rsa::Error::InvalidPrime) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// crypto-primes' `sieve_and_find` with the rsa crate's factory and
/// predicate, testing a batch of sieved candidates at a time.
fn prime<R: CryptoRng + ?Sized>(
    rng: &mut R,
    bits: u32,
    threads: usize,
) -> Result<BoxedUint, String> {
    let mut factory =
        SmallFactorsSieveFactory::<BoxedUint>::new(Flavor::Any, bits, SetBits::TwoMsb)
            .map_err(|e| e.to_string())?;
    let mut sieve = factory
        .make_sieve(rng, None)
        .map_err(|e| e.to_string())?
        .ok_or("no prime candidates")?;
    // A few candidates per thread: enough to keep every core busy, few
    // enough that little work is wasted past the prime.
    let batch_len = threads * 4;
    let mut batch = Vec::with_capacity(batch_len);
    loop {
        batch.clear();
        batch.extend(sieve.by_ref().take(batch_len));
        if let Some(i) = first_prime(&batch, threads) {
            return Ok(batch.swap_remove(i));
        }
        if batch.len() < batch_len {
            sieve = factory
                .make_sieve(rng, Some(&sieve))
                .map_err(|e| e.to_string())?
                .ok_or("no prime candidates")?;
        }
    }
}

/// The index of the first candidate that `is_prime`, testing on `threads`
/// threads. Every index below the returned one has been tested: a thread
/// takes indices in increasing order and skips one only when a smaller
/// index has already passed.
fn first_prime(candidates: &[BoxedUint], threads: usize) -> Option<usize> {
    let next = AtomicUsize::new(0);
    let found = AtomicUsize::new(usize::MAX);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= candidates.len() || i > found.load(Ordering::Relaxed) {
                break;
            }
            if is_prime(Flavor::Any, &candidates[i]) {
                found.fetch_min(i, Ordering::Relaxed);
            }
        }
    };
    if threads <= 1 || candidates.len() <= 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 1..threads.min(candidates.len()) {
                // A thread that cannot start leaves its share to the
                // others: the calling thread alone still tests every
                // candidate it must.
                let _ = std::thread::Builder::new()
                    .name("antiopa-rsa".into())
                    .spawn_scoped(s, work);
            }
            work();
        });
    }
    let i = found.into_inner();
    (i != usize::MAX).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rsa::signature::{Signer, Verifier};
    use rsa::traits::PrivateKeyParts;

    fn seeded(seed: u64) -> rand_chacha::ChaCha20Rng {
        rand_chacha::ChaCha20Rng::seed_from_u64(seed)
    }

    /// Big-endian bytes without leading zeros, to compare numbers stored
    /// with different precisions.
    fn be(x: &BoxedUint) -> Vec<u8> {
        let b = x.to_be_bytes();
        let start = b.iter().position(|&v| v != 0).unwrap_or(b.len());
        b[start..].to_vec()
    }

    #[test]
    fn a_4096_bit_key_is_a_valid_two_prime_rsa_key() {
        let key = generate(&mut seeded(3), 4096).unwrap();
        assert_eq!(key.n().bits(), 4096);
        assert_eq!(be(key.e()), vec![0x01, 0x00, 0x01]);
        let [p, q] = key.primes() else {
            panic!("{} primes", key.primes().len())
        };
        let (p, q): (&BoxedUint, &BoxedUint) = (p, q);
        let wide_p = BoxedUint::from_be_slice(&be(p), 4096).unwrap();
        assert_eq!(be(&(&wide_p * q)), be(key.n()));
        assert!(is_prime(Flavor::Any, p) && is_prime(Flavor::Any, q));
        key.validate().unwrap();
        let signing = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(key.clone());
        let sig = signing.sign(b"antiopa");
        let verifying = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(key.to_public_key());
        verifying.verify(b"antiopa", &sig).unwrap();
        assert!(verifying.verify(b"antiopA", &sig).is_err());
    }

    /// `--seed` renders: the same key for the same seed, whatever the number
    /// of cores, and the very key the rsa crate's own generation makes, so
    /// seeded output is what it was before this module.
    #[test]
    fn seeded_generation_is_reproducible_and_the_rsa_crates_key() {
        let reference = rsa::RsaPrivateKey::new(&mut seeded(7), 2048).unwrap();
        for threads in [1, 2, 5] {
            let key = generate_with_threads(&mut seeded(7), 2048, threads).unwrap();
            assert!(key == reference, "{threads} threads");
        }
        let other = generate(&mut seeded(8), 2048).unwrap();
        assert!(other != reference);
    }

    /// `generate` takes the caller's budget; the key is the crate's either way.
    #[test]
    fn generate_uses_the_callers_budget() {
        let reference = rsa::RsaPrivateKey::new(&mut seeded(9), 2048).unwrap();
        assert!(generate(&mut seeded(9), 2048).unwrap() == reference);
        let spread = crate::engine::threads::with_threads(3, || {
            assert_eq!(crate::engine::threads::threads(), 3);
            generate(&mut seeded(9), 2048).unwrap()
        });
        assert!(spread == reference);
    }

    #[test]
    fn too_small_keys_are_refused_as_the_crate_does() {
        let err = generate(&mut seeded(1), 512).unwrap_err();
        assert_eq!(err, rsa::Error::ModulusTooSmall.to_string());
    }
}
