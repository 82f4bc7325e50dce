//! `[radio]`: the PHY every node shares (standard, channel, preamble, CCA,
//! capture, basic rate; for 802.11n/ac streams, guard interval, antennas
//! and the MIMO channel), parsed and lowered into a [`RadioConfig`].
//!
//! ```toml
//! [radio]
//! standard = "802.11g"
//! channel = 6
//! basic_rate = "1 Mbps"
//! ```
//!
//! An 802.11n or 802.11ac radio's band and width follow its channel
//! number (38 is a 40 MHz channel at 5 GHz; [`crate::phy::ht`]):
//!
//! ```toml
//! [radio]
//! standard = "802.11n"
//! channel = 38
//! spatial_streams = 2
//! guard_interval = "short"
//! mimo_channel = "rich-scattering"
//! ```

use super::common::{
    check_range, display, err, from_str, rate_mode, yes, zero_db, PowerQ, RateQ, RatioQ,
    ScenarioError,
};
use crate::config::RadioConfig;
use crate::phy::error::{ClosedForm, ErrorModelKind, Mimo};
use crate::phy::ht::HtPhy;
use crate::phy::mode::{Mode, Preamble, Standard};
use crate::units::{parse_quantity, Db, Dbm, Hertz, Quantity};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PreambleName {
    Long,
    Short,
}

#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Radio {
    #[serde(deserialize_with = "from_str", serialize_with = "display")]
    pub standard: Standard,
    #[serde(default)]
    pub channel: Option<u32>,
    #[serde(default = "yes")]
    pub b_compatible: bool,
    #[serde(default = "long")]
    pub preamble: PreambleName,
    #[serde(default = "default_cca")]
    pub cca_threshold: PowerQ,
    /// A frame this much stronger than the one being received takes over; "off" disables.
    #[serde(default = "default_capture")]
    pub capture_margin: CaptureMargin,
    #[serde(default = "zero_db")]
    pub implementation_loss: RatioQ,
    /// The BSS's lowest basic rate (default the standard's lowest):
    /// broadcasts and management frames go at it, control responses at a
    /// basic rate from it up, and a node's `range` is defined at it.
    #[serde(default)]
    pub basic_rate: Option<RateQ>,
    /// How an OFDM receiver knows the channel over a frame.
    #[serde(default)]
    pub ofdm_channel_estimate: ChannelEstimateName,
    /// 802.11n/ac: the spatial streams a radio can send, 1 to 4 (default 1).
    #[serde(default)]
    pub spatial_streams: Option<u8>,
    /// 802.11n/ac: "long" (800 ns, default) or "short" (400 ns, both GIs
    /// then offered to rate control).
    #[serde(default)]
    pub guard_interval: Option<GuardName>,
    /// 802.11n/ac: antennas per radio, at least `spatial_streams`
    /// (default equal to it).
    #[serde(default)]
    pub antennas: Option<u8>,
    /// 802.11n/ac: how many streams the channel separates
    /// ([`crate::phy::error`]): "line-of-sight" (one; default) or
    /// "rich-scattering" (as many as the antennas).
    #[serde(default)]
    pub mimo_channel: Option<MimoName>,
    /// Write a `frames` row for every drop of a frame whose preamble the
    /// radio could not detect, instead of counting them.
    #[serde(default)]
    pub undetectable_rows: bool,
}

/// `radio.guard_interval`.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum GuardName {
    Long,
    Short,
}

/// `radio.mimo_channel`.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum MimoName {
    LineOfSight,
    RichScattering,
}

/// `radio.ofdm_channel_estimate` ([`crate::channel::Fades::aging`]).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ChannelEstimateName {
    /// The channel is known at every instant of the frame.
    #[default]
    Ideal,
    /// Learnt from the preamble's long training symbols and kept for the
    /// frame (IEEE 802.11-2007 §17.3.3), the pilots following a common phase.
    Preamble,
}

fn long() -> PreambleName {
    PreambleName::Long
}
fn default_cca() -> PowerQ {
    PowerQ(Dbm(-62.0))
}
fn default_capture() -> CaptureMargin {
    CaptureMargin(Some(Db(10.0)))
}

/// A capture margin in dB, or `"off"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaptureMargin(pub Option<Db>);

impl Serialize for CaptureMargin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            None => s.serialize_str("off"),
            Some(db) => RatioQ(db).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for CaptureMargin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim() == "off" {
            return Ok(CaptureMargin(None));
        }
        parse_quantity(&s, Quantity::Ratio)
            .map(|v| CaptureMargin(Some(Db(v))))
            .map_err(|e| {
                de::Error::custom(format!("invalid capture margin \"{s}\": {e}, or \"off\""))
            })
    }
}

impl Radio {
    /// The channel radios use unless they name one: `channel`, else the
    /// standard's usual (6 in 2.4 GHz, 36 in 5 GHz, 178 for 802.11p).
    pub(super) fn channel_number(&self) -> u32 {
        self.channel.unwrap_or(match self.standard.legacy() {
            Standard::A => 36,
            Standard::P => 178,
            _ => 6,
        })
    }

    /// The standard as configured: for 802.11n/ac with the streams and
    /// guard interval given, tuned to the radio channel.
    pub(super) fn standard(&self) -> Result<Standard, ScenarioError> {
        let Standard::Ht(phy) = self.standard else {
            return match self.ht_key() {
                Some(k) => err(format!(
                    "radio.{k}: only 802.11n and 802.11ac radios have it; this one is {}",
                    self.standard
                )),
                None => Ok(self.standard),
            };
        };
        let streams = self.spatial_streams.unwrap_or(1);
        check_range(
            "radio.spatial_streams",
            f64::from(streams),
            &streams.to_string(),
            1.0,
            4.0,
            "1 to 4",
        )?;
        let channel = self.channel_number();
        HtPhy {
            streams,
            short_gi: self.guard_interval == Some(GuardName::Short),
            ..phy
        }
        .on_channel(channel)
        .map(Standard::Ht)
        .map_err(|e| ScenarioError(format!("radio.channel: {e}")))
    }

    /// The first 802.11n/ac-only key given, if any.
    fn ht_key(&self) -> Option<&'static str> {
        [
            (self.spatial_streams.is_some(), "spatial_streams"),
            (self.guard_interval.is_some(), "guard_interval"),
            (self.antennas.is_some(), "antennas"),
            (self.mimo_channel.is_some(), "mimo_channel"),
        ]
        .into_iter()
        .find_map(|(set, k)| set.then_some(k))
    }

    /// The antennas and channel rank of an 802.11n/ac radio
    /// ([`Mimo::SISO`] for the others).
    fn mimo(&self) -> Result<Mimo, ScenarioError> {
        let streams = self.spatial_streams.unwrap_or(1);
        let antennas = self.antennas.unwrap_or(streams);
        if !(streams..=4).contains(&antennas) {
            return err(format!(
                "radio.antennas: {antennas} cannot send {streams} spatial streams; \
                 allowed: {streams} to 4"
            ));
        }
        let rank = match self.mimo_channel {
            Some(MimoName::RichScattering) => antennas,
            _ => 1,
        };
        Ok(Mimo { antennas, rank })
    }

    /// The carrier frequency of channel `number`.
    pub(super) fn frequency(&self, number: u32) -> Result<Hertz, ScenarioError> {
        self.standard
            .default_channel_frequency(number)
            .map_err(|e| ScenarioError(format!("radio.channel: {e}")))
    }

    pub(super) fn lower(&self) -> Result<RadioConfig, ScenarioError> {
        let r = self;
        let cca = r.cca_threshold.0 .0;
        check_range(
            "radio.cca_threshold",
            cca,
            &format!("{cca} dBm"),
            -120.0,
            0.0,
            "-120 dBm to 0 dBm",
        )?;
        if let Some(m) = r.capture_margin.0 {
            check_range(
                "radio.capture_margin",
                m.0,
                &format!("{} dB", m.0),
                0.0,
                60.0,
                "0 dB to 60 dB, or \"off\"",
            )?;
        }
        let il = r.implementation_loss.0 .0;
        check_range(
            "radio.implementation_loss",
            il,
            &format!("{il} dB"),
            0.0,
            30.0,
            "0 dB to 30 dB",
        )?;
        let standard = r.standard()?;
        Ok(RadioConfig {
            standard,
            b_compatible: r.b_compatible,
            preamble: match r.preamble {
                PreambleName::Long => Preamble::Long,
                PreambleName::Short => Preamble::Short,
            },
            cca_threshold: r.cca_threshold.0,
            capture_margin: r.capture_margin.0,
            error_model: ErrorModelKind::ClosedForm(ClosedForm {
                implementation_loss: r.implementation_loss.0,
                mimo: self.mimo()?,
            }),
            basic_rate: self.basic_rate()?,
            ofdm_preamble_estimate: r.ofdm_channel_estimate == ChannelEstimateName::Preamble,
            undetectable_rows: r.undetectable_rows,
        })
    }

    /// `radio.basic_rate`, or the standard's lowest basic rate.
    fn basic_rate(&self) -> Result<Mode, ScenarioError> {
        let standard = self.standard()?;
        self.basic_rate.map_or(Ok(standard.basic_rates()[0]), |r| {
            rate_mode(standard, "radio.basic_rate", r)
        })
    }
}
