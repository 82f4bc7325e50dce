//! Provider keys and signed file certificates (§3).
//!
//! A certificate binds a file name, a 16-bit version, a size and a content hash
//! to the provider's Ed25519 key. `fileId = H(provider key ‖ name)` and
//! `instanceId = H(encoded certificate)`. A [`Certificate`] value always carries
//! a valid signature: decoding verifies it, and the only other constructor signs.
//! Whether the signer is *trusted* is a separate check ([`TrustedKeys`]).
//!
//! Two formats are read. **v1** (`BSC1`) is the paper's: the content hash
//! covers the whole file, so a receiver can only check the file after its
//! last block. **v2** (`BSC2`) adds a block size and the root of a
//! [`merkle`](crate::merkle) tree over the blocks, so each block is checked
//! as it arrives and a peer sending one bad block is caught at once; v2 is
//! what [`Certificate::issue_v2`] signs. A v1 file still transfers, with the
//! whole-file check at the end. The signing context names the format, so a
//! v1 signature never verifies as v2 or the other way round.

use crate::id::{FileId, Id160, InstanceId, ID_LEN};
use crate::merkle::{Hash, Shape, HASH_LEN};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::collections::BTreeSet;
use std::fmt;

const MAGIC: &[u8; 4] = b"BSC1";
const MAGIC_V2: &[u8; 4] = b"BSC2";
const SIGNING_CONTEXT: &[u8] = b"broadside certificate v1\0";
const SIGNING_CONTEXT_V2: &[u8] = b"broadside certificate v2\0";
/// Bytes a v2 certificate adds: block size u32 and the tree root.
const V2_EXTRA: usize = 4 + HASH_LEN;
/// Longest allowed file name, in bytes.
pub const MAX_NAME_LEN: usize = 128;
const FIXED_LEN: usize = 4 + 32 + ID_LEN + 2 + 8 + ID_LEN + 1;
const SIG_LEN: usize = 64;
/// Largest encoded certificate.
pub const MAX_CERT_LEN: usize = FIXED_LEN + V2_EXTRA + MAX_NAME_LEN + SIG_LEN;
/// Block sizes a v2 certificate may fix.
pub const V2_BLOCK_SIZES: core::ops::RangeInclusive<u32> = 256..=65_497;

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
    #[error("not a broadside certificate: magic must be BSC1 or BSC2")]
    BadMagic,
    /// A v2 block size outside what is allowed, or a tree that cannot be
    /// cut into chunks of that size.
    #[error("v2 block size {0} refused: allowed 256..=65497 bytes, with room for one leaf hash and its proof")]
    BadBlockSize(u32),
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
    /// v2: block size and the root of the tree over the blocks.
    tree: Option<(u32, Hash)>,
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
    tree: Option<(u32, Hash)>,
    name: &str,
) -> Vec<u8> {
    let mut b = Vec::with_capacity(FIXED_LEN + V2_EXTRA + name.len() + SIG_LEN);
    b.extend_from_slice(if tree.is_some() { MAGIC_V2 } else { MAGIC });
    b.extend_from_slice(&provider.0);
    b.extend_from_slice(&file_id.0);
    b.extend_from_slice(&version.to_be_bytes());
    b.extend_from_slice(&size.to_be_bytes());
    b.extend_from_slice(&hash.0);
    if let Some((block_size, root)) = tree {
        b.extend_from_slice(&block_size.to_be_bytes());
        b.extend_from_slice(&root);
    }
    // validate_name bounds the length by MAX_NAME_LEN < 256.
    b.push(name.len() as u8);
    b.extend_from_slice(name.as_bytes());
    b
}

fn signed_message(body: &[u8]) -> Vec<u8> {
    let context = if body.starts_with(MAGIC_V2) {
        SIGNING_CONTEXT_V2
    } else {
        SIGNING_CONTEXT
    };
    [context, body].concat()
}

/// Whether a file of `size` bytes can be committed to in blocks of `block_size`.
fn check_block_size(size: u64, block_size: u32) -> Result<Shape, CertError> {
    if !V2_BLOCK_SIZES.contains(&block_size) {
        return Err(CertError::BadBlockSize(block_size));
    }
    let blocks = size.div_ceil(u64::from(block_size)).max(1);
    u32::try_from(blocks)
        .ok()
        .and_then(|n| Shape::new(n, block_size))
        .ok_or(CertError::BadBlockSize(block_size))
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
        Self::sign(key, name, version, size, content_hash, None)
    }

    /// Signs a v2 certificate: as [`issue`](Self::issue), plus the block
    /// size and the root of the tree over the blocks (see
    /// [`merkle::TreeBuilder`](crate::merkle::TreeBuilder), which yields
    /// size, content hash and leaves in one pass over the file).
    pub fn issue_v2(
        key: &ProviderKey,
        name: &str,
        version: u16,
        size: u64,
        content_hash: Id160,
        block_size: u32,
        root: Hash,
    ) -> Result<Self, CertError> {
        check_block_size(size, block_size)?;
        Self::sign(
            key,
            name,
            version,
            size,
            content_hash,
            Some((block_size, root)),
        )
    }

    fn sign(
        key: &ProviderKey,
        name: &str,
        version: u16,
        size: u64,
        content_hash: Id160,
        tree: Option<(u32, Hash)>,
    ) -> Result<Self, CertError> {
        validate_name(name)?;
        let provider = key.public();
        let file_id = file_id_of(&provider, name);
        let mut encoded = body(
            &provider,
            &file_id,
            version,
            size,
            &content_hash,
            tree,
            name,
        );
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
            tree,
            signature,
            encoded,
            instance,
        })
    }

    /// Parses and verifies an encoded certificate, v1 or v2 (untrusted input).
    pub fn decode(bytes: &[u8]) -> Result<Self, CertError> {
        let truncated = |need| CertError::Truncated {
            got: bytes.len(),
            need,
        };
        let v2 = match bytes.get(..4) {
            None => return Err(truncated(FIXED_LEN)),
            Some(m) if m == MAGIC => false,
            Some(m) if m == MAGIC_V2 => true,
            Some(_) => return Err(CertError::BadMagic),
        };
        let fixed = FIXED_LEN + if v2 { V2_EXTRA } else { 0 };
        if bytes.len() < fixed {
            return Err(truncated(fixed));
        }
        let name_len = usize::from(bytes[fixed - 1]);
        let need = fixed + name_len + SIG_LEN;
        if bytes.len() < need {
            return Err(truncated(need));
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
        let tree = if v2 {
            let block_size = u32::from_be_bytes([bytes[86], bytes[87], bytes[88], bytes[89]]);
            check_block_size(size, block_size)?;
            Some((block_size, arr32(90)))
        } else {
            None
        };
        let name_bytes = &bytes[fixed..fixed + name_len];
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
        signature.copy_from_slice(&bytes[fixed + name_len..]);
        let vk = VerifyingKey::from_bytes(&provider.0).map_err(|_| CertError::BadKey)?;
        vk.verify_strict(
            &signed_message(&bytes[..fixed + name_len]),
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
            tree,
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
    /// Whether this certificate replaces `other` (of the same file): a
    /// higher version, or the same version with a greater instance id. Two
    /// validly signed certificates of one version (a *fork*: the provider
    /// signed twice, or two publishers share its key) would otherwise never
    /// converge; every node picks the same one, whichever it saw first.
    pub fn supersedes(&self, other: &Certificate) -> bool {
        (self.version, self.instance) > (other.version, other.instance)
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
    /// v2: the block size and the root of the tree over the blocks; `None` for v1.
    pub fn tree(&self) -> Option<(u32, Hash)> {
        self.tree
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
    fn v2_roundtrips_and_any_flipped_bit_is_rejected() {
        let k = key(4);
        let c =
            Certificate::issue_v2(&k, "tiles", 3, 10_000, Id160([5; 20]), 2294, [6; 32]).unwrap();
        assert_eq!(&c.encoded()[..4], b"BSC2");
        let d = Certificate::decode(c.encoded()).unwrap();
        assert_eq!(d, c);
        assert_eq!(d.tree(), Some((2294, [6; 32])));
        for i in 0..c.encoded().len() {
            let mut b = c.encoded().to_vec();
            b[i] ^= 0x04;
            assert!(
                Certificate::decode(&b).is_err(),
                "flip at byte {i} accepted"
            );
        }
        // A v1 body relabelled as v2 (or back) does not verify.
        let v1 = Certificate::issue(&k, "tiles", 3, 10_000, Id160([5; 20])).unwrap();
        assert_eq!(v1.tree(), None);
        let mut relabelled = v1.encoded().to_vec();
        relabelled[..4].copy_from_slice(b"BSC2");
        assert!(Certificate::decode(&relabelled).is_err());
        assert_eq!(
            Certificate::issue_v2(&k, "t", 1, 10, Id160::default(), 16, [0; 32]),
            Err(CertError::BadBlockSize(16))
        );
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
