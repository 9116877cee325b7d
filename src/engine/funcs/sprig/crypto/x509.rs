//! Private keys, PEM and X.509 certificate creation as Sprig does them with
//! Go's `crypto/x509` (`getCertAndKey`, `getBaseCertTemplate`,
//! `pemBlockForKey`, `parsePrivateKeyPEM`).
//!
//! The TBSCertificate is assembled with a small hand-written DER writer
//! rather than a certificate builder crate, because the output has to carry
//! exactly the fields and encodings Go's `x509.CreateCertificate` writes:
//! extension order (KeyUsage, ExtKeyUsage, BasicConstraints, SubjectKeyId,
//! AuthorityKeyId, SAN), PrintableString vs UTF8String for the common name,
//! UTCTime vs GeneralizedTime, a SAN marked critical when the subject is
//! empty. Keys, signatures and parsing come from the RustCrypto crates.

use der::{Decode, Encode};
use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use rand::RngExt;
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{self, DecodePrivateKey, EncodePublicKey};
use rsa::signature::{RandomizedSigner, SignatureEncoding, Signer};
use sha1::Digest;
use x509_cert::{der, spki};

use crate::engine::funcs::Env;
use crate::engine::funcs::sprig::dates::{GoTime, Location};

/// The private keys Sprig can generate or parse.
pub enum PrivKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    /// Only P-256 is supported here (what `genPrivateKey "ecdsa"` makes).
    Ec(p256::SecretKey),
    Ed25519(Box<ed25519_dalek::SigningKey>),
    /// DSA keys can be generated and parsed, but Go can neither sign a
    /// certificate with one nor marshal its public key, so only the
    /// components are kept.
    Dsa(DsaParts),
}

/// Go's `DSAKeyFormat` (OpenSSL's `DSA PRIVATE KEY`): big-endian P, Q, G,
/// Y, X.
pub struct DsaParts {
    pub p: Vec<u8>,
    pub q: Vec<u8>,
    pub g: Vec<u8>,
    pub y: Vec<u8>,
    pub x: Vec<u8>,
}

// ---- DER writing ----

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A non-negative INTEGER from big-endian magnitude bytes.
fn der_uint(be: &[u8]) -> Vec<u8> {
    let skip = be.iter().take_while(|b| **b == 0).count();
    let mut body = be[skip..].to_vec();
    if body.first().is_none_or(|b| b & 0x80 != 0) {
        body.insert(0, 0);
    }
    tlv(0x02, &body)
}

fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted.split('.').filter_map(|a| a.parse().ok()).collect();
    let mut body = Vec::new();
    if arcs.len() >= 2 {
        let mut push = |mut v: u64| {
            let mut tmp = vec![(v & 0x7f) as u8];
            v >>= 7;
            while v > 0 {
                tmp.push(0x80 | (v & 0x7f) as u8);
                v >>= 7;
            }
            tmp.reverse();
            body.extend(tmp);
        };
        push(arcs[0] * 40 + arcs[1]);
        for &a in &arcs[2..] {
            push(a);
        }
    }
    tlv(0x06, &body)
}

const NULL: &[u8] = &[0x05, 0x00];

/// Go's `asn1` PrintableString test (asterisk allowed, ampersand not):
/// other strings are written as UTF8String.
fn is_printable(s: &str) -> bool {
    s.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || (b'\''..=b')').contains(&b)
            || (b'+'..=b'/').contains(&b)
            || matches!(b, b' ' | b':' | b'=' | b'?' | b'*')
    })
}

/// `pkix.Name{CommonName: cn}` as an RDNSequence (empty when `cn` is).
fn name_cn(cn: &str) -> Vec<u8> {
    if cn.is_empty() {
        return seq(&[]);
    }
    let tag = if is_printable(cn) { 0x13 } else { 0x0c };
    let atv = seq(&[&oid("2.5.4.3"), &tlv(tag, cn.as_bytes())]);
    seq(&[&tlv(0x31, &atv)])
}

/// Go's asn1 time: UTCTime for 1950..2050, GeneralizedTime otherwise.
fn der_time(t: &GoTime) -> Vec<u8> {
    let utc = t.in_loc(Location::Utc);
    let year = utc.civil().year;
    if (1950..2050).contains(&year) {
        tlv(0x17, utc.format("060102150405Z").as_bytes())
    } else {
        tlv(0x18, utc.format("20060102150405Z").as_bytes())
    }
}

fn extension(id: &str, critical: bool, value: &[u8]) -> Vec<u8> {
    let crit: &[u8] = if critical { &[0x01, 0x01, 0xff] } else { &[] };
    seq(&[&oid(id), crit, &tlv(0x04, value)])
}

/// Go's `marshalKeyUsage`: bits reversed into a BIT STRING with the
/// trailing zero bits counted as unused.
fn key_usage(ku: u16) -> Vec<u8> {
    let a = [(ku as u8).reverse_bits(), ((ku >> 8) as u8).reverse_bits()];
    let bytes = if a[1] != 0 { &a[..] } else { &a[..1] };
    let unused = bytes
        .last()
        .map_or(0, |b| if *b == 0 { 0 } else { b.trailing_zeros() as u8 });
    let mut body = vec![unused];
    body.extend_from_slice(bytes);
    tlv(0x03, &body)
}

// ---- PEM ----

/// Go's `pem.EncodeToMemory` (no headers): 64-column base64 lines.
pub fn pem_encode(typ: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {typ}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {typ}-----\n"));
    out
}

/// Go's `pem.Decode`, enough of it: the first well-formed block's type and
/// bytes (headers skipped), or `None`.
pub fn pem_decode(data: &str) -> Option<(String, Vec<u8>)> {
    use base64::Engine;
    let mut rest = data;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let type_end = after.find("-----")?;
        let typ = &after[..type_end];
        let body_start = &after[type_end + 5..];
        let end_marker = format!("-----END {typ}-----");
        if !typ.contains('\n')
            && let Some(end) = body_start.find(&end_marker)
        {
            let body = &body_start[..end];
            // Headers ("Key: value" lines) end at the first blank line.
            let body = if body.lines().nth(1).is_some_and(|l| l.contains(':')) {
                body.split_once("\n\n").map_or(body, |(_, b)| b)
            } else {
                body
            };
            let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64) {
                return Some((typ.to_string(), bytes));
            }
        }
        rest = &rest[start + 11..];
    }
    None
}

// ---- keys ----

impl PrivKey {
    pub fn generate_rsa(env: &Env, bits: usize) -> Result<PrivKey, String> {
        // The rsa crate's key for this random stream, found on all cores.
        let key = super::rsa_keygen::generate(&mut *env.rng(), bits)?;
        Ok(PrivKey::Rsa(Box::new(key)))
    }

    pub fn generate_ec(env: &Env) -> PrivKey {
        use dsa::Generate;
        PrivKey::Ec(p256::SecretKey::generate_from_rng(&mut *env.rng()))
    }

    pub fn generate_ed25519(env: &Env) -> PrivKey {
        let mut seed = [0u8; 32];
        env.rng().fill(&mut seed);
        PrivKey::Ed25519(Box::new(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    /// `dsa.GenerateParameters(L2048N256)` + `dsa.GenerateKey`.
    pub fn generate_dsa(env: &Env) -> Result<PrivKey, String> {
        let mut rng = env.rng();
        let components = dsa::Components::try_generate_from_rng_with_key_size(
            &mut *rng,
            dsa::KeySize::DSA_2048_256,
        )
        .map_err(|e| format!("failed to generate dsa params: {e:?}"))?;
        let key = dsa::SigningKey::try_generate_from_rng_with_components(&mut *rng, components)
            .map_err(|e| format!("failed to generate private key: {e:?}"))?;
        let vk = key.verifying_key();
        let c = vk.components();
        Ok(PrivKey::Dsa(DsaParts {
            p: c.p().to_be_bytes().to_vec(),
            q: c.q().to_be_bytes().to_vec(),
            g: c.g().to_be_bytes().to_vec(),
            y: vk.y().to_be_bytes().to_vec(),
            x: key.x().to_be_bytes().to_vec(),
        }))
    }

    /// Go's `pemBlockForKey` + `pem.Encode`.
    pub fn to_pem(&self) -> Result<String, String> {
        Ok(match self {
            PrivKey::Rsa(k) => {
                let der = k.to_pkcs1_der().map_err(|e| e.to_string())?;
                pem_encode("RSA PRIVATE KEY", der.as_bytes())
            }
            PrivKey::Ec(k) => {
                let der = k.to_sec1_der().map_err(|e| e.to_string())?;
                pem_encode("EC PRIVATE KEY", &der)
            }
            PrivKey::Ed25519(k) => {
                // Go's MarshalPKCS8PrivateKey writes a v1 PKCS#8 without the
                // public key.
                let kp = ed25519_dalek::pkcs8::KeypairBytes {
                    secret_key: k.to_bytes(),
                    public_key: None,
                };
                let der = kp.to_pkcs8_der().map_err(|e| e.to_string())?;
                pem_encode("PRIVATE KEY", der.as_bytes())
            }
            PrivKey::Dsa(d) => {
                let der = seq(&[
                    &der_uint(&[0]),
                    &der_uint(&d.p),
                    &der_uint(&d.q),
                    &der_uint(&d.g),
                    &der_uint(&d.y),
                    &der_uint(&d.x),
                ]);
                pem_encode("DSA PRIVATE KEY", &der)
            }
        })
    }

    /// Sprig's `parsePrivateKeyPEM`, with its error texts.
    pub fn from_pem(pem: &str) -> Result<PrivKey, String> {
        let (typ, der) = pem_decode(pem).ok_or("no PEM data in input")?;
        if typ == "PRIVATE KEY" {
            return parse_pkcs8(&der).map_err(|e| format!("decoding PEM as PKCS#8: {e}"));
        }
        let Some(kind) = typ.strip_suffix(" PRIVATE KEY") else {
            return Err(format!("no private key data in PEM block of type {typ}"));
        };
        match kind {
            "RSA" => rsa::RsaPrivateKey::from_pkcs1_der(&der)
                .map(|k| PrivKey::Rsa(Box::new(k)))
                .map_err(|_| {
                    "parsing RSA private key from PEM: x509: failed to parse private key"
                        .to_string()
                }),
            "EC" => p256::SecretKey::from_sec1_der(&der)
                .map(PrivKey::Ec)
                .map_err(|_| {
                    "parsing EC private key from PEM: x509: failed to parse EC private key"
                        .to_string()
                }),
            "DSA" => parse_dsa(&der).ok_or_else(|| {
                "parsing DSA private key from PEM: asn1: structure error".to_string()
            }),
            _ => Err(format!("invalid private key type {typ}")),
        }
    }

    /// The DER SubjectPublicKeyInfo (Go's `marshalPublicKey`).
    fn spki_der(&self) -> Result<Vec<u8>, String> {
        let der = match self {
            PrivKey::Rsa(k) => k.to_public_key().to_public_key_der(),
            PrivKey::Ec(k) => k.public_key().to_public_key_der(),
            PrivKey::Ed25519(k) => k.verifying_key().to_public_key_der(),
            PrivKey::Dsa(_) => {
                return Err("x509: unsupported public key type: *dsa.PublicKey".into());
            }
        };
        der.map(|d| d.as_bytes().to_vec())
            .map_err(|e| e.to_string())
    }

    /// The signature AlgorithmIdentifier Go picks for the key:
    /// SHA256WithRSA (PKCS #1 v1.5), ECDSAWithSHA256, PureEd25519.
    fn sig_alg(&self) -> Result<Vec<u8>, String> {
        match self {
            PrivKey::Rsa(_) => Ok(seq(&[&oid("1.2.840.113549.1.1.11"), NULL])),
            PrivKey::Ec(_) => Ok(seq(&[&oid("1.2.840.10045.4.3.2")])),
            PrivKey::Ed25519(_) => Ok(seq(&[&oid("1.3.101.112")])),
            PrivKey::Dsa(_) => {
                Err("x509: certificate private key does not implement crypto.Signer".into())
            }
        }
    }

    /// Sign `tbs` with the algorithm of [`PrivKey::sig_alg`].
    fn sign(&self, env: &Env, tbs: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            PrivKey::Rsa(k) => {
                let signer = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new((**k).clone());
                let sig = signer.try_sign(tbs).map_err(|e| e.to_string())?;
                Ok(sig.to_vec())
            }
            PrivKey::Ec(k) => {
                let signer = p256::ecdsa::SigningKey::from(k);
                let sig: p256::ecdsa::Signature = signer
                    .try_sign_with_rng(&mut *env.rng(), tbs)
                    .map_err(|e| e.to_string())?;
                Ok(sig.to_der().as_bytes().to_vec())
            }
            PrivKey::Ed25519(k) => Ok(k.sign(tbs).to_bytes().to_vec()),
            PrivKey::Dsa(_) => {
                Err("x509: certificate private key does not implement crypto.Signer".into())
            }
        }
    }
}

fn parse_pkcs8(der: &[u8]) -> Result<PrivKey, String> {
    let info = pkcs8::PrivateKeyInfoRef::from_der(der)
        .map_err(|e| format!("x509: failed to parse private key: {e}"))?;
    let alg = info.algorithm.oid.to_string();
    let bad = |_| format!("x509: failed to parse private key ({alg})");
    match alg.as_str() {
        "1.2.840.113549.1.1.1" => rsa::RsaPrivateKey::from_pkcs8_der(der)
            .map(|k| PrivKey::Rsa(Box::new(k)))
            .map_err(bad),
        "1.2.840.10045.2.1" => p256::SecretKey::from_pkcs8_der(der)
            .map(PrivKey::Ec)
            .map_err(bad),
        "1.3.101.112" => ed25519_dalek::SigningKey::from_pkcs8_der(der)
            .map(|k| PrivKey::Ed25519(Box::new(k)))
            .map_err(bad),
        _ => Err(format!(
            "x509: PKCS#8 wrapping contained private key with unknown algorithm: {alg}"
        )),
    }
}

/// A minimal DER reader: the (tag, content, rest) of the first element.
fn read_tlv(data: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = data.split_first()?;
    let (&len0, rest) = rest.split_first()?;
    let (len, rest) = if len0 < 0x80 {
        (usize::from(len0), rest)
    } else {
        let n = usize::from(len0 & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        (
            rest[..n]
                .iter()
                .fold(0usize, |acc, b| acc << 8 | usize::from(*b)),
            &rest[n..],
        )
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

fn parse_dsa(der: &[u8]) -> Option<PrivKey> {
    let (tag, mut body, _) = read_tlv(der)?;
    if tag != 0x30 {
        return None;
    }
    let mut ints = Vec::new();
    while !body.is_empty() {
        let (tag, content, rest) = read_tlv(body)?;
        if tag != 0x02 {
            return None;
        }
        ints.push(content.to_vec());
        body = rest;
    }
    if ints.len() != 6 {
        return None;
    }
    let mut it = ints.into_iter().skip(1);
    let mut next = || it.next().unwrap_or_default();
    Some(PrivKey::Dsa(DsaParts {
        p: next(),
        q: next(),
        g: next(),
        y: next(),
        x: next(),
    }))
}

// ---- certificates ----

/// A parsed issuer certificate: what `CreateCertificate` takes from its
/// parent.
pub struct Parent {
    subject_der: Vec<u8>,
    spki_der: Vec<u8>,
    subject_key_id: Option<Vec<u8>>,
}

/// `x509.ParseCertificate` on PEM-decoded bytes, keeping what a parent
/// contributes.
pub fn parse_certificate(der: &[u8]) -> Result<Parent, String> {
    let cert = x509_cert::Certificate::from_der(der).map_err(|_| "x509: malformed certificate")?;
    let tbs = cert.tbs_certificate();
    let subject_der = tbs.subject().to_der().map_err(|e| e.to_string())?;
    let spki_der = tbs
        .subject_public_key_info()
        .to_der()
        .map_err(|e| e.to_string())?;
    let subject_key_id = tbs.extensions().and_then(|exts| {
        exts.iter()
            .find(|e| e.extn_id.to_string() == "2.5.29.14")
            .and_then(|e| read_tlv(e.extn_value.as_bytes()).map(|(_, id, _)| id.to_vec()))
    });
    Ok(Parent {
        subject_der,
        spki_der,
        subject_key_id,
    })
}

/// The parts of Sprig's `getBaseCertTemplate` (and the CA overrides).
pub struct Template {
    pub cn: String,
    pub ips: Vec<std::net::IpAddr>,
    pub dns_names: Vec<String>,
    pub days_valid: i64,
    pub is_ca: bool,
}

// x509.KeyUsage bits.
const KU_DIGITAL_SIGNATURE: u16 = 1;
const KU_KEY_ENCIPHERMENT: u16 = 1 << 2;
const KU_CERT_SIGN: u16 = 1 << 5;

/// Go's `x509.CreateCertificate(rand, template, parent, pub, priv)` for
/// Sprig's templates; `parent` `None` means self-signed. Returns the DER
/// certificate.
pub fn create_certificate(
    env: &Env,
    tpl: &Template,
    signee: &PrivKey,
    parent: Option<&Parent>,
    signer: &PrivKey,
) -> Result<Vec<u8>, String> {
    // Go checks the signer first, then marshals the signee's public key.
    if let PrivKey::Dsa(_) = signer {
        return Err("x509: certificate private key does not implement crypto.Signer".into());
    }
    let spki = signee.spki_der()?;
    let signer_spki = signer.spki_der()?;
    if let Some(p) = parent
        && p.spki_der != signer_spki
    {
        return Err("x509: provided PrivateKey doesn't match parent's PublicKey".into());
    }
    for name in &tpl.dns_names {
        if !name.is_ascii() {
            return Err(format!("x509: {name:?} cannot be encoded as an IA5String"));
        }
    }

    // Serial: rand.Int(rand.Reader, 2^128).
    let mut serial = [0u8; 16];
    env.rng().fill(&mut serial);

    let now = GoTime::from_chrono(env.now());
    // time.Hour * 24 * time.Duration(daysValid): int64 nanoseconds, wrapping
    // like Go's on overflow.
    let validity_ns = 86_400_000_000_000i64.wrapping_mul(tpl.days_valid);
    let not_after = now.add(validity_ns);

    let subject = name_cn(&tpl.cn);
    let issuer = parent.map_or_else(|| subject.clone(), |p| p.subject_der.clone());

    let mut exts: Vec<Vec<u8>> = Vec::new();
    let mut ku = KU_KEY_ENCIPHERMENT | KU_DIGITAL_SIGNATURE;
    if tpl.is_ca {
        ku |= KU_CERT_SIGN;
    }
    exts.push(extension("2.5.29.15", true, &key_usage(ku)));
    exts.push(extension(
        "2.5.29.37",
        false,
        &seq(&[&oid("1.3.6.1.5.5.7.3.1"), &oid("1.3.6.1.5.5.7.3.2")]),
    ));
    let bc: &[u8] = if tpl.is_ca { &[0x01, 0x01, 0xff] } else { &[] };
    exts.push(extension("2.5.29.19", true, &seq(&[bc])));
    if tpl.is_ca {
        // RFC 5280 method 1: SHA-1 of the subjectPublicKey bits.
        let info = spki::SubjectPublicKeyInfoRef::from_der(&spki).map_err(|e| e.to_string())?;
        let ski = sha1::Sha1::digest(info.subject_public_key.raw_bytes());
        exts.push(extension("2.5.29.14", false, &tlv(0x04, &ski)));
    }
    if let Some(p) = parent
        && p.subject_der != subject
        && let Some(aki) = &p.subject_key_id
    {
        exts.push(extension("2.5.29.35", false, &seq(&[&tlv(0x80, aki)])));
    }
    if !tpl.dns_names.is_empty() || !tpl.ips.is_empty() {
        let mut names = Vec::new();
        for dns in &tpl.dns_names {
            names.extend(tlv(0x82, dns.as_bytes()));
        }
        for ip in &tpl.ips {
            let bytes = match ip {
                std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
                std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                    Some(v4) => v4.octets().to_vec(),
                    None => v6.octets().to_vec(),
                },
            };
            names.extend(tlv(0x87, &bytes));
        }
        exts.push(extension(
            "2.5.29.17",
            tpl.cn.is_empty(),
            &tlv(0x30, &names),
        ));
    }

    let alg = signer.sig_alg()?;
    let tbs = seq(&[
        &[0xa0, 0x03, 0x02, 0x01, 0x02],
        &der_uint(&serial),
        &alg,
        &issuer,
        &seq(&[&der_time(&now), &der_time(&not_after)]),
        &subject,
        &spki,
        &tlv(0xa3, &tlv(0x30, &exts.concat())),
    ]);
    let sig = signer.sign(env, &tbs)?;
    let mut bits = vec![0u8];
    bits.extend(sig);
    Ok(seq(&[&tbs, &alg, &tlv(0x03, &bits)]))
}
