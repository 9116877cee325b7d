//! Sprig v3.3.0's crypto functions (`crypto.go`): certificate generation
//! (`genCA`, `genSelfSignedCert`, `genSignedCert` and their `…WithKey`
//! forms, `buildCustomCert`), `genPrivateKey`, `derivePassword` (the Master
//! Password algorithm), `bcrypt`, `htpasswd`, `encryptAES`/`decryptAES`.
//! (`randBytes` and the `sha*sum` hashes live elsewhere.)
//!
//! Randomness (keys, serials, salts, IVs) comes from `env.rng` and the
//! certificate validity from `env.now()`, so reproducible mode gives the same
//! output on every run.

mod rsa_keygen;
mod x509;

use std::any::Any;
use std::rc::Rc;

use base64::Engine;
use hmac::{KeyInit, Mac};
use rand::RngExt;

use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::value::{Member, Object, Value};
use x509::{PrivKey, Template};

/// Sprig's `certificate` struct: `.Cert` and `.Key` are PEM strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    pub cert: String,
    pub key: String,
}

impl Object for Certificate {
    fn type_name(&self) -> &str {
        "sprig.certificate"
    }
    fn kind_name(&self) -> &str {
        "struct"
    }
    fn member(&self, name: &str) -> Option<Member> {
        match name {
            "Cert" => Some(Member::Field(Value::str(&self.cert))),
            "Key" => Some(Member::Field(Value::str(&self.key))),
            _ => None,
        }
    }
    fn fmt_v(&self, out: &mut String) {
        // Go's %v of a struct value: {field field}.
        out.push('{');
        out.push_str(&self.cert);
        out.push(' ');
        out.push_str(&self.key);
        out.push('}');
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("Cert", Value::str(&self.cert)),
            ("Key", Value::str(&self.key)),
        ])
    }
}

fn str_arg(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn int_arg(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::I64(i) => *i,
        _ => 0,
    }
}

fn cert_value(c: Certificate) -> Value {
    Value::Object(Rc::new(c))
}

/// A `certificate` parameter: text/template refuses anything else.
fn cert_arg(v: &Value) -> Result<Certificate, String> {
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Certificate>()
            .cloned()
            .ok_or_else(|| {
                format!(
                    "wrong type for value; expected sprig.certificate; got {}",
                    o.type_name()
                )
            }),
        Value::Nil => Err("invalid value; expected sprig.certificate".into()),
        other => Err(format!(
            "wrong type for value; expected sprig.certificate; got {}",
            other.type_name()
        )),
    }
}

/// Sprig's `getNetIPs`: every element must be a string holding an IP.
fn net_ips(v: &Value) -> Result<Vec<std::net::IpAddr>, String> {
    let Value::List(l) = v else {
        return Ok(Vec::new());
    };
    l.items
        .iter()
        .map(|ip| match ip {
            Value::Str(s) => parse_go_ip(s).ok_or_else(|| format!("error parsing ip: {s}")),
            other => Err(format!(
                "error parsing ip: {} is not a string",
                crate::engine::gofmt::to_string_v(other)
            )),
        })
        .collect()
}

/// Go's `net.ParseIP`: dotted IPv4 (no leading zeros) or IPv6, no zone.
fn parse_go_ip(s: &str) -> Option<std::net::IpAddr> {
    if s.contains('%') {
        return None;
    }
    s.parse().ok()
}

/// Sprig's `getAlternateDNSStrs`.
fn dns_names(v: &Value) -> Result<Vec<String>, String> {
    let Value::List(l) = v else {
        return Ok(Vec::new());
    };
    l.items
        .iter()
        .map(|d| match d {
            Value::Str(s) => Ok(s.to_string()),
            other => Err(format!(
                "error processing alternate dns name: {} is not a string",
                crate::engine::gofmt::to_string_v(other)
            )),
        })
        .collect()
}

/// Sprig's `getCertAndKey`: create the certificate and PEM-encode it with
/// the signee's key.
fn cert_and_key(
    env: &Env,
    tpl: &Template,
    signee: &PrivKey,
    parent: Option<(&x509::Parent, &PrivKey)>,
) -> Result<Certificate, String> {
    let (parent_cert, signer) = match parent {
        Some((p, k)) => (Some(p), k),
        None => (None, signee),
    };
    let der = x509::create_certificate(env, tpl, signee, parent_cert, signer)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(Certificate {
        cert: x509::pem_encode("CERTIFICATE", &der),
        key: signee
            .to_pem()
            .map_err(|e| format!("error pem-encoding key: {e}"))?,
    })
}

fn rsa_2048(env: &Env) -> Result<PrivKey, String> {
    PrivKey::generate_rsa(env, 2048).map_err(|e| format!("error generating rsa key: {e}"))
}

fn pem_key(pem: &Value) -> Result<PrivKey, String> {
    PrivKey::from_pem(str_arg(pem)).map_err(|e| format!("parsing private key: {e}"))
}

fn ca_template(a: &[Value]) -> Template {
    Template {
        cn: str_arg(&a[0]).to_string(),
        ips: Vec::new(),
        dns_names: Vec::new(),
        days_valid: int_arg(&a[1]),
        is_ca: true,
    }
}

fn leaf_template(a: &[Value]) -> Result<Template, String> {
    Ok(Template {
        cn: str_arg(&a[0]).to_string(),
        ips: net_ips(&a[1])?,
        dns_names: dns_names(&a[2])?,
        days_valid: int_arg(&a[3]),
        is_ca: false,
    })
}

/// `genCA cn daysValid`
fn gen_ca(env: &Env, a: &[Value]) -> FuncResult {
    let key = rsa_2048(env)?;
    Ok(cert_value(cert_and_key(env, &ca_template(a), &key, None)?))
}

/// `genCAWithKey cn daysValid keyPEM`
fn gen_ca_with_key(env: &Env, a: &[Value]) -> FuncResult {
    let key = pem_key(&a[2])?;
    Ok(cert_value(cert_and_key(env, &ca_template(a), &key, None)?))
}

/// `genSelfSignedCert cn ips dnsNames daysValid`
fn gen_self_signed_cert(env: &Env, a: &[Value]) -> FuncResult {
    let key = rsa_2048(env)?;
    let tpl = leaf_template(a)?;
    Ok(cert_value(cert_and_key(env, &tpl, &key, None)?))
}

/// `genSelfSignedCertWithKey cn ips dnsNames daysValid keyPEM`
fn gen_self_signed_cert_with_key(env: &Env, a: &[Value]) -> FuncResult {
    let key = pem_key(&a[4])?;
    let tpl = leaf_template(a)?;
    Ok(cert_value(cert_and_key(env, &tpl, &key, None)?))
}

/// Sprig's `generateSignedCertificateWithKeyInternal` after the key is had.
fn signed_cert(env: &Env, a: &[Value], ca: &Certificate, key: &PrivKey) -> FuncResult {
    let (_, der) = x509::pem_decode(&ca.cert).ok_or("unable to decode certificate")?;
    let parent = x509::parse_certificate(&der)
        .map_err(|e| format!("error parsing certificate: decodedSignerCert.Bytes: {e}"))?;
    let signer =
        PrivKey::from_pem(&ca.key).map_err(|e| format!("error parsing private key: {e}"))?;
    let tpl = leaf_template(a)?;
    Ok(cert_value(cert_and_key(
        env,
        &tpl,
        key,
        Some((&parent, &signer)),
    )?))
}

/// `genSignedCert cn ips dnsNames daysValid ca`
fn gen_signed_cert(env: &Env, a: &[Value]) -> FuncResult {
    let ca = cert_arg(&a[4])?;
    let key = rsa_2048(env)?;
    signed_cert(env, a, &ca, &key)
}

/// `genSignedCertWithKey cn ips dnsNames daysValid ca keyPEM`
fn gen_signed_cert_with_key(env: &Env, a: &[Value]) -> FuncResult {
    let ca = cert_arg(&a[4])?;
    let key = pem_key(&a[5])?;
    signed_cert(env, a, &ca, &key)
}

/// `buildCustomCert base64Cert base64Key`: validates and wraps an existing
/// certificate and key.
fn build_custom_cert(_: &Env, a: &[Value]) -> FuncResult {
    let b64 = base64::engine::general_purpose::STANDARD;
    let cert = b64
        .decode(go_base64_input(str_arg(&a[0])))
        .map_err(|_| "unable to decode base64 certificate")?;
    let key = b64
        .decode(go_base64_input(str_arg(&a[1])))
        .map_err(|_| "unable to decode base64 private key")?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let (_, der) = x509::pem_decode(&cert).ok_or("unable to decode certificate")?;
    x509::parse_certificate(&der)
        .map_err(|e| format!("error parsing certificate: decodedCert.Bytes: {e}"))?;
    PrivKey::from_pem(&key).map_err(|e| format!("error parsing private key: {e}"))?;
    Ok(cert_value(Certificate { cert, key }))
}

/// Go's base64 decoder skips `\r` and `\n` anywhere in the input.
fn go_base64_input(s: &str) -> String {
    s.chars().filter(|c| *c != '\r' && *c != '\n').collect()
}

/// `genPrivateKey type`: errors are returned as the string, as Sprig does.
fn gen_private_key(env: &Env, a: &[Value]) -> FuncResult {
    let typ = str_arg(&a[0]);
    let key = match typ {
        // "good enough for government work"
        "" | "rsa" => PrivKey::generate_rsa(env, 4096),
        "dsa" => PrivKey::generate_dsa(env),
        "ecdsa" => Ok(PrivKey::generate_ec(env)),
        "ed25519" => Ok(PrivKey::generate_ed25519(env)),
        _ => return Ok(Value::string(format!("Unknown type {typ}"))),
    };
    Ok(Value::string(match key.and_then(|k| k.to_pem()) {
        Ok(pem) => pem,
        Err(e) if e.starts_with("failed to") => e,
        Err(e) => format!("failed to generate private key: {e}"),
    }))
}

/// Go's bcrypt.GenerateFromPassword at the default cost, `$2a$` form.
fn bcrypt_hash(env: &Env, password: &str) -> String {
    if password.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .to_string();
    }
    let mut salt = [0u8; 16];
    env.rng().fill(&mut salt);
    match bcrypt::hash_with_salt(password, 10, salt) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn bcrypt_fn(env: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::string(bcrypt_hash(env, str_arg(&a[0]))))
}

/// `htpasswd user password`: `user:$2a$10$…`.
fn htpasswd(env: &Env, a: &[Value]) -> FuncResult {
    let user = str_arg(&a[0]);
    if user.contains(':') {
        return Ok(Value::string(format!("invalid username: {user}")));
    }
    Ok(Value::string(format!(
        "{user}:{}",
        bcrypt_hash(env, str_arg(&a[1]))
    )))
}

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

fn password_templates(typ: &str) -> Option<&'static [&'static str]> {
    Some(match typ {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_characters(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// `derivePassword counter type password user site`: the Master Password
/// algorithm (scrypt N=32768 r=8 p=2 over the user, HMAC-SHA256 over the
/// site and counter, then a template of character classes).
fn derive_password(_: &Env, a: &[Value]) -> FuncResult {
    let counter = int_arg(&a[0]);
    let counter = u32::try_from(counter).map_err(|_| format!("{counter} overflows uint32"))?;
    let (typ, password, user, site) = (
        str_arg(&a[1]),
        str_arg(&a[2]),
        str_arg(&a[3]),
        str_arg(&a[4]),
    );
    let Some(templates) = password_templates(typ) else {
        return Ok(Value::string(format!(
            "cannot find password template {typ}"
        )));
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend((user.len() as u32).to_be_bytes());
    salt.extend(user.as_bytes());
    let mut key = [0u8; 64];
    let params = scrypt::Params::new(15, 8, 2).map_err(|e| e.to_string())?;
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key) {
        return Ok(Value::string(format!("failed to derive password: {e}")));
    }
    let mut msg = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    msg.extend((site.len() as u32).to_be_bytes());
    msg.extend(site.as_bytes());
    msg.extend(counter.to_be_bytes());
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key).map_err(|e| e.to_string())?;
    mac.update(&msg);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    let out: String = template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_characters(class);
            chars[usize::from(seed[i + 1]) % chars.len()] as char
        })
        .collect();
    Ok(Value::string(out))
}

/// Sprig's AES key: the password's bytes in a zeroed 32-byte buffer
/// (truncated past 32), so always AES-256.
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    key
}

/// `encryptAES password plaintext`: AES-256-CBC, PKCS #7 padding, random
/// IV prepended, standard base64.
fn encrypt_aes(env: &Env, a: &[Value]) -> FuncResult {
    use aes::cipher::{BlockModeEncrypt, KeyIvInit, block_padding::Pkcs7};
    let plaintext = str_arg(&a[1]);
    if plaintext.is_empty() {
        return Ok(Value::str(""));
    }
    let key = aes_key(str_arg(&a[0]));
    let mut iv = [0u8; 16];
    env.rng().fill(&mut iv);
    let enc = cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into());
    let ct = enc.encrypt_padded_vec::<Pkcs7>(plaintext.as_bytes());
    let mut out = iv.to_vec();
    out.extend(ct);
    Ok(Value::string(
        base64::engine::general_purpose::STANDARD.encode(out),
    ))
}

/// `decryptAES password base64`: the inverse, with the panics Go's code
/// would hit on malformed input reported as the call's error.
fn decrypt_aes(_: &Env, a: &[Value]) -> FuncResult {
    use aes::cipher::{BlockModeDecrypt, KeyIvInit, block_padding::NoPadding};
    let crypt64 = str_arg(&a[1]);
    if crypt64.is_empty() {
        return Ok(Value::str(""));
    }
    let key = aes_key(str_arg(&a[0]));
    let crypt = base64::engine::general_purpose::STANDARD
        .decode(go_base64_input(crypt64))
        .map_err(|e| match e {
            base64::DecodeError::InvalidByte(at, _)
            | base64::DecodeError::InvalidLastSymbol { offset: at, .. } => {
                format!("illegal base64 data at input byte {at}")
            }
            _ => format!("illegal base64 data at input byte {}", crypt64.len()),
        })?;
    if crypt.len() < 16 {
        return Err(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt.len()
        ));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    if body.is_empty() {
        return Err("runtime error: index out of range [-1]".into());
    }
    let mut buf = body.to_vec();
    let iv: [u8; 16] = iv
        .try_into()
        .map_err(|_| "crypto/cipher: IV length must equal block size")?;
    let dec = cbc::Decryptor::<aes::Aes256>::new(&key.into(), &iv.into());
    let plain = dec
        .decrypt_padded::<NoPadding>(&mut buf)
        .map_err(|_| "crypto/cipher: input not full blocks".to_string())?;
    // Sprig strips as many bytes as the last byte says, unchecked.
    let pad = usize::from(plain[plain.len() - 1]);
    if pad > plain.len() {
        return Err(format!(
            "runtime error: slice bounds out of range [:{}]",
            plain.len() as i64 - pad as i64
        ));
    }
    Ok(Value::string(
        String::from_utf8_lossy(&plain[..plain.len() - pad]).into_owned(),
    ))
}

pub const FUNCS: &[FuncDef] = {
    use Param::{Any, Int, List, Str};
    &[
        super::def("genCA", &[Str, Int], gen_ca),
        super::def("genCAWithKey", &[Str, Int, Str], gen_ca_with_key),
        super::def(
            "genSelfSignedCert",
            &[Str, List, List, Int],
            gen_self_signed_cert,
        ),
        super::def(
            "genSelfSignedCertWithKey",
            &[Str, List, List, Int, Str],
            gen_self_signed_cert_with_key,
        ),
        // The `ca` parameter is Go's `certificate` struct, checked in the impl.
        super::def(
            "genSignedCert",
            &[Str, List, List, Int, Any],
            gen_signed_cert,
        ),
        super::def(
            "genSignedCertWithKey",
            &[Str, List, List, Int, Any, Str],
            gen_signed_cert_with_key,
        ),
        super::def("buildCustomCert", &[Str, Str], build_custom_cert),
        super::def("genPrivateKey", &[Str], gen_private_key),
        // Go's counter parameter is uint32.
        super::def(
            "derivePassword",
            &[Int, Str, Str, Str, Str],
            derive_password,
        ),
        super::def("bcrypt", &[Str], bcrypt_fn),
        super::def("htpasswd", &[Str, Str], htpasswd),
        super::def("encryptAES", &[Str, Str], encrypt_aes),
        super::def("decryptAES", &[Str, Str], decrypt_aes),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn env() -> Env {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T23:37:16Z").unwrap();
        Env::reproducible(11, now)
    }

    /// The fixed time of [`env`] (Unix seconds): openssl checks the
    /// certificates' validity at the time they were made, not today's.
    const VERIFY_AT: &str = "1795304236";

    fn s(v: &str) -> Value {
        Value::str(v)
    }

    fn text(v: FuncResult) -> String {
        v.unwrap().as_str().unwrap().to_string()
    }

    fn cert_of(v: &Value) -> Certificate {
        let Value::Object(o) = v else {
            panic!("not an object")
        };
        o.as_any().downcast_ref::<Certificate>().unwrap().clone()
    }

    /// `openssl x509 -text` of a PEM certificate.
    fn openssl_text(dir: &std::path::Path, name: &str, pem: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        let out = Command::new("openssl")
            .args(["x509", "-noout", "-text", "-in"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn derive_password_matches_helm() {
        let e = env();
        let call = |c: i64, t: &str, p: &str, u: &str, site: &str| {
            text(derive_password(
                &e,
                &[Value::Int(c), s(t), s(p), s(u), s(site)],
            ))
        };
        // Expected values rendered by helm v3.17.3.
        assert_eq!(
            call(1, "long", "password", "user", "example.com"),
            "ZedaFaxcZaso9*"
        );
        assert_eq!(
            call(3, "maximum", "pässword", "üser", "example.com"),
            "U7@#1CGfIyKLDda)BsO^"
        );
        assert_eq!(call(1, "pin", "x", "", ""), "5042");
        assert_eq!(
            call(1, "nope", "x", "", ""),
            "cannot find password template nope"
        );
    }

    #[test]
    fn decrypts_what_helm_encrypted() {
        let e = env();
        let dec = |p: &str, c: &str| text(decrypt_aes(&e, &[s(p), s(c)]));
        assert_eq!(
            dec("secretkey", "h1CAoV9RDNKpp0QkgcvLFpwMwXQOkawpLyua3Uac/64="),
            "plaintext"
        );
        assert_eq!(
            dec(
                "a-very-long-password-that-exceeds-thirty-two-bytes",
                "qTS9olDRr07gpi6FWHqso01j3waCDRTZmthYB4mi6O1qzYfklGIH1yQfGx9L0xQU"
            ),
            "0123456789abcdef"
        );
        let enc = text(encrypt_aes(&e, &[s("k"), s("hello world")]));
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&enc)
                .unwrap()
                .len(),
            32
        );
        assert_eq!(dec("k", &enc), "hello world");
        assert_eq!(text(encrypt_aes(&e, &[s("k"), s("")])), "");
        assert_eq!(dec("k", ""), "");
        assert_eq!(
            decrypt_aes(&e, &[s("k"), s("AAAA")]).unwrap_err(),
            "runtime error: slice bounds out of range [:16] with capacity 3"
        );
        assert_eq!(
            decrypt_aes(&e, &[s("k"), s("!!")]).unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        // The panics helm reports for malformed ciphertexts.
        assert_eq!(
            decrypt_aes(
                &e,
                &[s("k"), s("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")]
            )
            .unwrap_err(),
            "runtime error: slice bounds out of range [:-19]"
        );
        assert_eq!(
            decrypt_aes(&e, &[s("k"), s("AAAAAAAAAAAAAAAAAAAAAA==")]).unwrap_err(),
            "runtime error: index out of range [-1]"
        );
    }

    #[test]
    fn bcrypt_and_htpasswd() {
        let e = env();
        let h = text(bcrypt_fn(&e, &[s("secret")]));
        assert!(h.starts_with("$2a$10$"), "{h}");
        assert!(bcrypt::verify("secret", &h).unwrap());
        let line = text(htpasswd(&e, &[s("admin"), s("pw")]));
        let (user, hash) = line.split_once(':').unwrap();
        assert_eq!(user, "admin");
        assert!(bcrypt::verify("pw", hash).unwrap());
        assert_eq!(
            text(htpasswd(&e, &[s("a:b"), s("x")])),
            "invalid username: a:b"
        );
    }

    #[test]
    fn private_keys_are_pem_that_openssl_reads() {
        let e = env();
        assert_eq!(text(gen_private_key(&e, &[s("foo")])), "Unknown type foo");
        for (typ, header) in [
            ("ecdsa", "EC PRIVATE KEY"),
            ("ed25519", "PRIVATE KEY"),
            ("rsa", "RSA PRIVATE KEY"),
        ] {
            let pem = text(gen_private_key(&e, &[s(typ)]));
            assert!(
                pem.starts_with(&format!("-----BEGIN {header}-----\n")),
                "{pem}"
            );
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("k.pem");
            std::fs::write(&path, &pem).unwrap();
            let out = Command::new("openssl")
                .args(["pkey", "-noout", "-in"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{typ}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Sprig reads back its own keys.
            assert!(PrivKey::from_pem(&pem).is_ok());
        }
    }

    /// DSA parameter generation takes seconds (as in Go), so on its own.
    #[test]
    fn dsa_private_key_is_openssl_dsa_pem() {
        let pem = text(gen_private_key(&env(), &[s("dsa")]));
        assert!(
            pem.starts_with("-----BEGIN DSA PRIVATE KEY-----\n"),
            "{pem}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        std::fs::write(&path, &pem).unwrap();
        let out = Command::new("openssl")
            .args(["dsa", "-noout", "-text", "-in"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("Private-Key: (2048 bit)"));
        assert!(PrivKey::from_pem(&pem).is_ok());
    }

    #[test]
    fn reproducible_env_gives_identical_certificates() {
        let make = || {
            let e = env();
            let ca = gen_ca(&e, &[s("ca"), Value::Int(1)]).unwrap();
            let key = text(gen_private_key(&e, &[s("ecdsa")]));
            let leaf = gen_signed_cert_with_key(
                &e,
                &[
                    s("l"),
                    Value::Nil,
                    Value::Nil,
                    Value::Int(1),
                    ca.clone(),
                    s(&key),
                ],
            )
            .unwrap();
            (
                cert_of(&ca),
                cert_of(&leaf),
                text(encrypt_aes(&e, &[s("k"), s("v")])),
            )
        };
        assert_eq!(make(), make());
    }

    #[test]
    fn certificates_are_real_and_signed_by_the_ca() {
        let e = env();
        let ca = gen_ca(&e, &[s("my-ca"), Value::Int(365)]).unwrap();
        assert_eq!(ca.type_name(), "sprig.certificate");
        let ca_c = cert_of(&ca);
        assert!(ca_c.key.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let ips = Value::list(vec![s("10.0.0.1"), s("::1")]);
        let dns = Value::list(vec![s("a.example"), s("*.b.example")]);
        let leaf = gen_signed_cert(
            &e,
            &[s("svc.example"), ips, dns, Value::Int(30), ca.clone()],
        )
        .unwrap();
        let leaf_c = cert_of(&leaf);

        let dir = tempfile::tempdir().unwrap();
        let ca_text = openssl_text(dir.path(), "ca.pem", &ca_c.cert);
        for want in [
            "Issuer: CN = my-ca",
            "Subject: CN = my-ca",
            "Not Before: Nov 21 23:37:16 2026 GMT",
            "Not After : Nov 21 23:37:16 2027 GMT",
            "Public-Key: (2048 bit)",
            "X509v3 Key Usage: critical\n                Digital Signature, Key Encipherment, Certificate Sign",
            "TLS Web Server Authentication, TLS Web Client Authentication",
            "X509v3 Basic Constraints: critical\n                CA:TRUE",
            "X509v3 Subject Key Identifier",
            "Signature Algorithm: sha256WithRSAEncryption",
        ] {
            assert!(ca_text.contains(want), "missing {want:?} in\n{ca_text}");
        }
        let leaf_text = openssl_text(dir.path(), "leaf.pem", &leaf_c.cert);
        for want in [
            "Issuer: CN = my-ca",
            "Subject: CN = svc.example",
            "Not After : Dec 21 23:37:16 2026 GMT",
            "X509v3 Key Usage: critical\n                Digital Signature, Key Encipherment\n",
            "CA:FALSE",
            "X509v3 Authority Key Identifier",
            "DNS:a.example, DNS:*.b.example, IP Address:10.0.0.1, IP Address:0:0:0:0:0:0:0:1",
        ] {
            assert!(leaf_text.contains(want), "missing {want:?} in\n{leaf_text}");
        }
        let out = Command::new("openssl")
            .args(["verify", "-attime", VERIFY_AT, "-CAfile"])
            .arg(dir.path().join("ca.pem"))
            .arg(dir.path().join("leaf.pem"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );

        // With an existing key, and round-tripped through buildCustomCert.
        let b64 = base64::engine::general_purpose::STANDARD;
        let custom =
            build_custom_cert(&e, &[s(&b64.encode(&ca_c.cert)), s(&b64.encode(&ca_c.key))])
                .unwrap();
        assert_eq!(cert_of(&custom), ca_c);
        let ec_key = text(gen_private_key(&e, &[s("ecdsa")]));
        let leaf2 = gen_signed_cert_with_key(
            &e,
            &[
                s("k"),
                Value::Nil,
                Value::Nil,
                Value::Int(1),
                custom,
                s(&ec_key),
            ],
        )
        .unwrap();
        let leaf2_c = cert_of(&leaf2);
        assert_eq!(leaf2_c.key, ec_key);
        std::fs::write(dir.path().join("leaf2.pem"), &leaf2_c.cert).unwrap();
        let out = Command::new("openssl")
            .args(["verify", "-attime", VERIFY_AT, "-CAfile"])
            .arg(dir.path().join("ca.pem"))
            .arg(dir.path().join("leaf2.pem"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    /// Go computes `time.Hour * 24 * time.Duration(days)` in int64
    /// nanoseconds, which wraps: helm gives 3000000 days a validity of
    /// about 30 years.
    #[test]
    fn validity_wraps_like_go() {
        let ca = gen_ca(&env(), &[s("x"), Value::Int(3_000_000)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let t = openssl_text(dir.path(), "ca.pem", &cert_of(&ca).cert);
        assert!(t.contains("Not After : Nov  8 05:33:24 2056 GMT"), "{t}");
    }

    #[test]
    fn self_signed_with_empty_subject_marks_san_critical() {
        let e = env();
        let ed_key = text(gen_private_key(&e, &[s("ed25519")]));
        let c = gen_self_signed_cert_with_key(
            &e,
            &[
                s(""),
                Value::Nil,
                Value::list(vec![s("x.example")]),
                Value::Int(10),
                s(&ed_key),
            ],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let t = openssl_text(dir.path(), "c.pem", &cert_of(&c).cert);
        assert!(
            t.contains("X509v3 Subject Alternative Name: critical\n                DNS:x.example"),
            "{t}"
        );
        assert!(t.contains("Signature Algorithm: ED25519"), "{t}");
        let out = Command::new("openssl")
            .args(["verify", "-check_ss_sig", "-partial_chain", "-CAfile"])
            .arg(dir.path().join("c.pem"))
            .arg(dir.path().join("c.pem"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    #[test]
    fn argument_errors() {
        let e = env();
        let bad_ip = gen_self_signed_cert(
            &e,
            &[
                s("x"),
                Value::list(vec![s("1.2.3")]),
                Value::Nil,
                Value::Int(1),
            ],
        );
        assert_eq!(bad_ip.unwrap_err(), "error parsing ip: 1.2.3");
        let bad_ip = gen_self_signed_cert(
            &e,
            &[
                s("x"),
                Value::list(vec![Value::Int(1)]),
                Value::Nil,
                Value::Int(1),
            ],
        );
        assert_eq!(bad_ip.unwrap_err(), "error parsing ip: 1 is not a string");
        assert_eq!(
            gen_ca_with_key(&e, &[s("x"), Value::Int(1), s("junk")]).unwrap_err(),
            "parsing private key: no PEM data in input"
        );
        assert_eq!(
            gen_signed_cert(
                &e,
                &[s("x"), Value::Nil, Value::Nil, Value::Int(1), s("ca")]
            )
            .unwrap_err(),
            "wrong type for value; expected sprig.certificate; got string"
        );
        assert_eq!(
            gen_self_signed_cert(
                &e,
                &[
                    s("x"),
                    Value::Nil,
                    Value::list(vec![s("ü.example")]),
                    Value::Int(1)
                ]
            )
            .unwrap_err(),
            "error creating certificate: x509: \"ü.example\" cannot be encoded as an IA5String"
        );
        let dsa_key = "-----BEGIN DSA PRIVATE KEY-----\nMBICAQACAQECAQICAQMCAQQCAQU=\n-----END DSA PRIVATE KEY-----\n";
        assert_eq!(
            gen_ca_with_key(&e, &[s("x"), Value::Int(1), s(dsa_key)]).unwrap_err(),
            "error creating certificate: x509: certificate private key does not implement crypto.Signer"
        );
        assert_eq!(
            gen_ca_with_key(
                &e,
                &[
                    s("x"),
                    Value::Int(1),
                    s("-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n")
                ]
            )
            .unwrap_err(),
            "parsing private key: no private key data in PEM block of type FOO"
        );
        assert_eq!(
            build_custom_cert(&e, &[s("!"), s("")]).unwrap_err(),
            "unable to decode base64 certificate"
        );
    }
}
