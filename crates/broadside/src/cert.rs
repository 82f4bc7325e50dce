//! Provider keys and signed file certificates (§3).
//!
//! A certificate binds a file name, a 16-bit version, a size and a content hash
//! to the provider's Ed25519 key. `fileId = H(provider key ‖ name)` and
//! `instanceId = H(encoded certificate)`. A [`Certificate`] value always carries
//! a valid signature: decoding verifies it, and the only other constructor signs.
//! Whether the signer is *trusted* is a separate check ([`TrustedKeys`]).

use crate::id::{FileId, Id160, InstanceId, ID_LEN};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::collections::BTreeSet;
use std::fmt;

const MAGIC: &[u8; 4] = b"BSC1";
const SIGNING_CONTEXT: &[u8] = b"broadside certificate v1\0";
/// Longest allowed file name, in bytes.
pub const MAX_NAME_LEN: usize = 128;
const FIXED_LEN: usize = 4 + 32 + ID_LEN + 2 + 8 + ID_LEN + 1;
const SIG_LEN: usize = 64;
/// Largest encoded certificate.
pub const MAX_CERT_LEN: usize = FIXED_LEN + MAX_NAME_LEN + SIG_LEN;

/// Why a certificate or name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    /// Encoded certificate shorter than its fixed fields or its name.
    #[error("certificate truncated: {got} bytes, need {need}")]
    Truncated {
        /// Bytes present.
        got: usize,
        /// Bytes needed.
        need: usize,
    },
    /// Bytes after the signature.
    #[error("certificate has {0} trailing bytes")]
    Trailing(usize),
    /// Wrong magic or format number.
    #[error("not a broadside v1 certificate")]
    BadMagic,
    /// The name is not allowed (see [`validate_name`]).
    #[error("invalid file name {name:?}: {why}; allowed: 1-{max} characters from A-Z a-z 0-9 . _ -, not starting with '.'", max = MAX_NAME_LEN)]
    InvalidName {
        /// The offending name (lossy).
        name: String,
        /// What rule it broke.
        why: &'static str,
    },
    /// fileId does not equal H(provider key ‖ name).
    #[error("fileId does not match H(provider key || name)")]
    FileIdMismatch,
    /// The provider key is not a valid Ed25519 point.
    #[error("provider key is not a valid Ed25519 public key")]
    BadKey,
    /// The signature does not verify.
    #[error("certificate signature does not verify")]
    BadSignature,
    /// Verified, but signed by a key that is not trusted.
    #[error("certificate signed by untrusted provider key {0}")]
    Untrusted(PublicKey),
}

/// Checks a file name: 1–128 bytes of `[A-Za-z0-9._-]`, not starting with `.`.
/// This rules out path separators, `..`, hidden files and control characters,
/// so a name can be used as a file name in a store directory as it is.
pub fn validate_name(name: &str) -> Result<(), CertError> {
    let bad = |why| {
        Err(CertError::InvalidName {
            name: name.chars().take(MAX_NAME_LEN).collect(),
            why,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad("too long");
    }
    if name.contains('/') || name.contains('\\') {
        return bad("contains a path separator");
    }
    if name.contains("..") {
        return bad("contains '..'");
    }
    if name.starts_with('.') {
        return bad("starts with '.'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return bad("contains a character outside A-Z a-z 0-9 . _ -");
    }
    Ok(())
}

/// A provider's Ed25519 public key (32 bytes).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    /// A key from 32 bytes, if they are a valid Ed25519 point.
    pub fn from_bytes_checked(bytes: [u8; 32]) -> Result<Self, CertError> {
        VerifyingKey::from_bytes(&bytes)
            .map(|_| PublicKey(bytes))
            .map_err(|_| CertError::BadKey)
    }
    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", &self.to_hex()[..16])
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// A content provider's signing key.
pub struct ProviderKey(SigningKey);

impl ProviderKey {
    /// The key derived from a 32-byte secret seed (keep it secret).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        ProviderKey(SigningKey::from_bytes(&seed))
    }
    /// The secret seed.
    pub fn seed(&self) -> [u8; 32] {
        self.0.to_bytes()
    }
    /// The public half.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }
}

/// The set of provider keys whose certificates a node accepts.
#[derive(Clone, Debug, Default)]
pub struct TrustedKeys(BTreeSet<PublicKey>);

impl TrustedKeys {
    /// Trust exactly these keys.
    pub fn new(keys: impl IntoIterator<Item = PublicKey>) -> Self {
        TrustedKeys(keys.into_iter().collect())
    }
    /// Whether `key` is trusted.
    pub fn contains(&self, key: &PublicKey) -> bool {
        self.0.contains(key)
    }
    /// The trusted keys.
    pub fn iter(&self) -> impl Iterator<Item = &PublicKey> {
        self.0.iter()
    }
}

/// A signed file certificate.
#[derive(Clone, PartialEq, Eq)]
pub struct Certificate {
    provider: PublicKey,
    file_id: FileId,
    version: u16,
    size: u64,
    content_hash: Id160,
    name: String,
    signature: [u8; SIG_LEN],
    encoded: Vec<u8>,
    instance: InstanceId,
}

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Certificate")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("size", &self.size)
            .field("file_id", &self.file_id)
            .field("instance", &self.instance)
            .finish()
    }
}

/// `H(provider key ‖ name)`.
pub fn file_id_of(provider: &PublicKey, name: &str) -> FileId {
    Id160::hash(&[&provider.0, name.as_bytes()])
}

fn body(
    provider: &PublicKey,
    file_id: &FileId,
    version: u16,
    size: u64,
    hash: &Id160,
    name: &str,
) -> Vec<u8> {
    let mut b = Vec::with_capacity(FIXED_LEN + name.len() + SIG_LEN);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&provider.0);
    b.extend_from_slice(&file_id.0);
    b.extend_from_slice(&version.to_be_bytes());
    b.extend_from_slice(&size.to_be_bytes());
    b.extend_from_slice(&hash.0);
    // validate_name bounds the length by MAX_NAME_LEN < 256.
    b.push(name.len() as u8);
    b.extend_from_slice(name.as_bytes());
    b
}

fn signed_message(body: &[u8]) -> Vec<u8> {
    [SIGNING_CONTEXT, body].concat()
}

impl Certificate {
    /// Signs a certificate for version `version` of `name` with `size` bytes
    /// whose content hash is `content_hash`.
    pub fn issue(
        key: &ProviderKey,
        name: &str,
        version: u16,
        size: u64,
        content_hash: Id160,
    ) -> Result<Self, CertError> {
        validate_name(name)?;
        let provider = key.public();
        let file_id = file_id_of(&provider, name);
        let mut encoded = body(&provider, &file_id, version, size, &content_hash, name);
        let signature = key.0.sign(&signed_message(&encoded)).to_bytes();
        encoded.extend_from_slice(&signature);
        let instance = Id160::hash(&[&encoded]);
        Ok(Certificate {
            provider,
            file_id,
            version,
            size,
            content_hash,
            name: name.to_owned(),
            signature,
            encoded,
            instance,
        })
    }

    /// Parses and verifies an encoded certificate (untrusted input).
    pub fn decode(bytes: &[u8]) -> Result<Self, CertError> {
        if bytes.len() < FIXED_LEN {
            return Err(CertError::Truncated {
                got: bytes.len(),
                need: FIXED_LEN,
            });
        }
        if &bytes[..4] != MAGIC {
            return Err(CertError::BadMagic);
        }
        let name_len = usize::from(bytes[FIXED_LEN - 1]);
        let need = FIXED_LEN + name_len + SIG_LEN;
        if bytes.len() < need {
            return Err(CertError::Truncated {
                got: bytes.len(),
                need,
            });
        }
        if bytes.len() > need {
            return Err(CertError::Trailing(bytes.len() - need));
        }
        let arr32 = |o: usize| -> [u8; 32] {
            let mut a = [0u8; 32];
            a.copy_from_slice(&bytes[o..o + 32]);
            a
        };
        let provider = PublicKey(arr32(4));
        let file_id = Id160::from_slice(&bytes[36..]).ok_or(CertError::BadMagic)?;
        let version = u16::from_be_bytes([bytes[56], bytes[57]]);
        let mut size_b = [0u8; 8];
        size_b.copy_from_slice(&bytes[58..66]);
        let size = u64::from_be_bytes(size_b);
        let content_hash = Id160::from_slice(&bytes[66..]).ok_or(CertError::BadMagic)?;
        let name_bytes = &bytes[FIXED_LEN..FIXED_LEN + name_len];
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        if name.as_bytes() != name_bytes {
            return Err(CertError::InvalidName {
                name,
                why: "not UTF-8",
            });
        }
        validate_name(&name)?;
        if file_id != file_id_of(&provider, &name) {
            return Err(CertError::FileIdMismatch);
        }
        let mut signature = [0u8; SIG_LEN];
        signature.copy_from_slice(&bytes[FIXED_LEN + name_len..]);
        let vk = VerifyingKey::from_bytes(&provider.0).map_err(|_| CertError::BadKey)?;
        vk.verify_strict(
            &signed_message(&bytes[..FIXED_LEN + name_len]),
            &Signature::from_bytes(&signature),
        )
        .map_err(|_| CertError::BadSignature)?;
        Ok(Certificate {
            provider,
            file_id,
            version,
            size,
            content_hash,
            name,
            signature,
            encoded: bytes.to_vec(),
            instance: Id160::hash(&[bytes]),
        })
    }

    /// Accepts the certificate only if its provider is in `trusted`.
    pub fn check_trusted(&self, trusted: &TrustedKeys) -> Result<(), CertError> {
        if trusted.contains(&self.provider) {
            Ok(())
        } else {
            Err(CertError::Untrusted(self.provider))
        }
    }

    /// The encoded, signed bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.encoded
    }
    /// The provider's public key.
    pub fn provider(&self) -> PublicKey {
        self.provider
    }
    /// `H(provider ‖ name)`.
    pub fn file_id(&self) -> FileId {
        self.file_id
    }
    /// `H(encoded certificate)`.
    pub fn instance_id(&self) -> InstanceId {
        self.instance
    }
    /// The 16-bit version; higher wins.
    pub fn version(&self) -> u16 {
        self.version
    }
    /// File size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// `H(file contents)`.
    pub fn content_hash(&self) -> Id160 {
        self.content_hash
    }
    /// The provider-chosen file name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The Ed25519 signature.
    pub fn signature(&self) -> &[u8; SIG_LEN] {
        &self.signature
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> ProviderKey {
        ProviderKey::from_seed([n; 32])
    }

    #[test]
    fn issue_decode_roundtrip() {
        let k = key(1);
        let c = Certificate::issue(&k, "map-uk.bin", 7, 1234, Id160([9; 20])).unwrap();
        let d = Certificate::decode(c.encoded()).unwrap();
        assert_eq!(c, d);
        assert_eq!(d.file_id(), file_id_of(&k.public(), "map-uk.bin"));
        assert_eq!(d.instance_id(), Id160::hash(&[c.encoded()]));
        assert!(d.check_trusted(&TrustedKeys::new([k.public()])).is_ok());
        assert_eq!(
            d.check_trusted(&TrustedKeys::new([key(2).public()])),
            Err(CertError::Untrusted(k.public()))
        );
    }

    #[test]
    fn any_flipped_bit_is_rejected() {
        let c = Certificate::issue(&key(1), "poi", 1, 10, Id160([1; 20])).unwrap();
        for i in 0..c.encoded().len() {
            for bit in 0..8 {
                let mut b = c.encoded().to_vec();
                b[i] ^= 1 << bit;
                assert!(
                    Certificate::decode(&b).is_err(),
                    "flip at byte {i} bit {bit} accepted"
                );
            }
        }
    }

    #[test]
    fn names_with_separators_or_dotdot_are_refused() {
        for bad in [
            "",
            "a/b",
            "..",
            "a..b",
            ".hidden",
            "a\\b",
            "a b",
            "ü",
            &"x".repeat(129),
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
            assert!(Certificate::issue(&key(1), bad, 1, 0, Id160::default()).is_err());
        }
        for good in ["a", "map_v2.bin", "A-Z.09"] {
            validate_name(good).unwrap();
        }
    }

    #[test]
    fn versions_change_instance_not_file_id() {
        let k = key(3);
        let a = Certificate::issue(&k, "f", 1, 1, Id160([1; 20])).unwrap();
        let b = Certificate::issue(&k, "f", 2, 1, Id160([1; 20])).unwrap();
        assert_eq!(a.file_id(), b.file_id());
        assert_ne!(a.instance_id(), b.instance_id());
    }
}
