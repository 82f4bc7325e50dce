//! The UDP datagram (RFC 768): the header the simulator needs for airtime,
//! and the payload bytes where an application needs them (a protocol
//! hosted unchanged, such as Broadside). UDP has no state; applications own
//! their sockets' behaviour.

use std::sync::Arc;

/// A UDP datagram: ports and payload length, and the payload itself when
/// the application that sent it works on bytes (shared, not copied, as it
/// travels).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub src_port: u16,
    pub dst_port: u16,
    /// Payload bytes.
    pub len: u32,
    /// The payload, `len` bytes long, or `None`: a length only.
    pub data: Option<Arc<[u8]>>,
}

impl Datagram {
    /// A datagram of `len` bytes whose content does not matter.
    pub fn sized(src_port: u16, dst_port: u16, len: u32) -> Datagram {
        Datagram {
            src_port,
            dst_port,
            len,
            data: None,
        }
    }

    /// A datagram carrying `data`.
    pub fn with_data(src_port: u16, dst_port: u16, data: Arc<[u8]>) -> Datagram {
        Datagram {
            src_port,
            dst_port,
            len: data.len() as u32,
            data: Some(data),
        }
    }

    /// The UDP header is always 8 bytes (RFC 768).
    pub fn header_bytes(&self) -> u32 {
        8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_header_bytes() {
        let d = Datagram::sized(1, 2, 1000);
        assert_eq!(d.header_bytes() + d.len, 1008);
        let e = Datagram::with_data(1, 2, Arc::from(&b"abc"[..]));
        assert_eq!(e.len, 3);
    }
}
