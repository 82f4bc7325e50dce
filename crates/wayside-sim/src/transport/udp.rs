//! UDP (RFC 768): the datagram header the simulator needs for airtime. UDP
//! has no state; applications own their sockets' behaviour.

/// A UDP datagram: ports and payload length (payload bytes are not carried).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub src_port: u16,
    pub dst_port: u16,
    /// Payload bytes.
    pub len: u32,
}

impl Datagram {
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
        let d = Datagram {
            src_port: 1,
            dst_port: 2,
            len: 1000,
        };
        assert_eq!(d.header_bytes() + d.len, 1008);
    }
}
