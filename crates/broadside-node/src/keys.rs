//! Key files: a provider's secret seed as hex (written with owner-only
//! permissions), and trusted public keys given as hex on the command line or
//! one per line in a file (`#` starts a comment).

use crate::NodeError;
use broadside::{ProviderKey, PublicKey};
use rand::RngCore;
use std::fs;
use std::io::Write;
use std::path::Path;

/// Parses 64 hex characters. `what` names the input in errors; secrets are never echoed.
fn parse_hex32(s: &str, what: &str) -> Result<[u8; 32], NodeError> {
    let bytes = hex::decode(s.trim()).map_err(|e| {
        NodeError::Usage(format!(
            "{what} is not hex ({e}); expected 64 hex characters"
        ))
    })?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        NodeError::Usage(format!(
            "{what} has {} bytes; expected 32 bytes (64 hex characters)",
            b.len()
        ))
    })
}

/// Parses a trusted public key in hex.
pub fn parse_public(s: &str) -> Result<PublicKey, NodeError> {
    PublicKey::from_bytes_checked(parse_hex32(s, &format!("public key {:?}", s.trim()))?).map_err(
        |_| {
            NodeError::Usage(format!(
                "public key {} is not a valid Ed25519 key",
                s.trim()
            ))
        },
    )
}

/// Reads trusted keys from a file: one hex key per line, `#` comments.
pub fn read_trust_file(path: &Path) -> Result<Vec<PublicKey>, NodeError> {
    let text = fs::read_to_string(path)
        .map_err(|e| NodeError::Usage(format!("cannot read trust file {}: {e}", path.display())))?;
    text.lines()
        .enumerate()
        .map(|(i, l)| (i, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            parse_public(l)
                .map_err(|e| NodeError::Usage(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Generates a key and writes its secret seed to `path` (refuses to overwrite).
pub fn generate(path: &Path) -> Result<ProviderKey, NodeError> {
    let mut seed = [0u8; 32];
    rand::rng().fill_bytes(&mut seed);
    let key = ProviderKey::from_seed(seed);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => NodeError::Usage(format!(
            "key file {} already exists; refusing to overwrite it",
            path.display()
        )),
        _ => NodeError::Runtime(format!("cannot create key file {}: {e}", path.display())),
    })?;
    writeln!(f, "{}", hex::encode(seed))
        .and_then(|()| f.sync_all())
        .map_err(|e| NodeError::Runtime(format!("writing {}: {e}", path.display())))?;
    Ok(key)
}

/// Reads a secret key file written by [`generate`].
pub fn read_secret(path: &Path) -> Result<ProviderKey, NodeError> {
    let text = fs::read_to_string(path)
        .map_err(|e| NodeError::Usage(format!("cannot read key file {}: {e}", path.display())))?;
    Ok(ProviderKey::from_seed(parse_hex32(
        &text,
        &format!("key file {}", path.display()),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_read_back_and_trust_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        let k = generate(&p).unwrap();
        assert!(matches!(generate(&p), Err(NodeError::Usage(_))));
        assert_eq!(read_secret(&p).unwrap().public(), k.public());
        let t = dir.path().join("trust");
        fs::write(&t, format!("# providers\n{}  # me\n\n", k.public())).unwrap();
        assert_eq!(read_trust_file(&t).unwrap(), vec![k.public()]);
        fs::write(&t, "abc\n").unwrap();
        let e = read_trust_file(&t).unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("64 hex"), "{e}");
    }
}
