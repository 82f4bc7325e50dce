"""GPS logs in and out: NMEA 0183 (RMC and GGA sentences, read and written
with pynmea2), GPX 1.1 (gpxpy) and CSV (time, lat, lon), and the local
plane that turns latitude and longitude into metres east and north of a
reference point and back.

A log is a polars DataFrame with columns `time_s` (seconds since the Unix
epoch, on the clock of the host that logged the fix, as the shell loop of
Hadaller et al. 2007 §3.3 stamped them), `lat` and `lon` (degrees, WGS 84),
sorted by time. Bad files raise `GpsLogError` naming the file, the line or
point, and what is allowed."""

from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

FORMATS = ("nmea", "gpx", "csv")
_SUFFIXES = {".nmea": "nmea", ".nmea0183": "nmea", ".gpx": "gpx", ".csv": "csv"}
LOG_SCHEMA = pl.Schema({"time_s": pl.Float64, "lat": pl.Float64, "lon": pl.Float64})

# WGS 84 ellipsoid (NIMA TR8350.2): semi-major axis and first eccentricity².
_WGS84_A = 6378137.0
_WGS84_E2 = 6.69437999014e-3


class GpsLogError(ValueError):
    """A GPS log that cannot be read or written."""


@dataclass(frozen=True)
class LocalPlane:
    """A tangent plane at (lat0, lon0): x metres east, y metres north. The
    radii of curvature of WGS 84 at lat0 scale degrees to metres; over the
    few kilometres of a drive-by the error is below a centimetre."""

    lat0: float
    lon0: float

    @property
    def _scale(self) -> tuple[float, float]:
        phi = math.radians(self.lat0)
        w = math.sqrt(1 - _WGS84_E2 * math.sin(phi) ** 2)
        meridian = _WGS84_A * (1 - _WGS84_E2) / w**3
        normal = _WGS84_A / w
        return math.radians(1) * normal * math.cos(phi), math.radians(1) * meridian

    def to_xy(self, lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        kx, ky = self._scale
        return (np.asarray(lon) - self.lon0) * kx, (np.asarray(lat) - self.lat0) * ky

    def to_latlon(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        kx, ky = self._scale
        return self.lat0 + np.asarray(y) / ky, self.lon0 + np.asarray(x) / kx


def log_format(path: str | Path) -> str:
    """The format of a log from its file name's suffix."""
    fmt = _SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise GpsLogError(f"{path}: unknown GPS log suffix; allowed: {', '.join(_SUFFIXES)}")
    return fmt


def _frame(times: list[float], lats: list[float], lons: list[float], path: Path) -> pl.DataFrame:
    if not times:
        raise GpsLogError(f"{path}: no position fixes in the log")
    return pl.DataFrame({"time_s": times, "lat": lats, "lon": lons}, schema=LOG_SCHEMA).sort("time_s")


def _epoch(t: dt.datetime) -> float:
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def _read_nmea(path: Path) -> pl.DataFrame:
    import pynmea2

    times, lats, lons = [], [], []
    date: dt.date | None = None
    for number, line in enumerate(path.read_text(encoding="ascii", errors="replace").splitlines(), 1):
        line = line.strip()
        if not line.startswith("$"):
            continue
        try:
            msg = pynmea2.parse(line, check=True)
        except pynmea2.ParseError as e:
            raise GpsLogError(f"{path}:{number}: not an NMEA 0183 sentence ({e})") from None
        kind = msg.sentence_type
        if kind == "RMC":
            if msg.status != "A" or msg.datestamp is None:
                continue  # no fix (status V)
            date = msg.datestamp
        elif kind == "GGA":
            if not msg.gps_qual:
                continue  # no fix
            if date is None:
                raise GpsLogError(f"{path}:{number}: a GGA fix before any RMC sentence gives the date; "
                                  "the log needs RMC sentences (GGA carries the time of day only)")
        else:
            continue
        when = _epoch(dt.datetime.combine(date, msg.timestamp))
        if times and abs(when - times[-1]) < 1e-6:
            continue  # RMC and GGA of the same fix
        times.append(when)
        lats.append(msg.latitude)
        lons.append(msg.longitude)
    return _frame(times, lats, lons, path)


def _read_gpx(path: Path) -> pl.DataFrame:
    import gpxpy
    import gpxpy.gpx

    try:
        doc = gpxpy.parse(path.read_text(encoding="utf-8"))
    except (gpxpy.gpx.GPXException, ValueError) as e:
        raise GpsLogError(f"{path}: not a GPX file ({e})") from None
    times, lats, lons = [], [], []
    for track in doc.tracks:
        for segment in track.segments:
            for i, p in enumerate(segment.points):
                if p.time is None:
                    raise GpsLogError(f"{path}: track point {i} at {p.latitude}, {p.longitude} has no <time>")
                times.append(_epoch(p.time))
                lats.append(p.latitude)
                lons.append(p.longitude)
    return _frame(times, lats, lons, path)


def _csv_time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return _epoch(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))


def _read_csv(path: Path) -> pl.DataFrame:
    times, lats, lons = [], [], []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = {"time", "lat", "lon"} - set(reader.fieldnames or ())
        if missing:
            raise GpsLogError(f"{path}: CSV header lacks {', '.join(sorted(missing))}; "
                              "it needs time (Unix seconds or ISO 8601), lat and lon (degrees)")
        for number, row in enumerate(reader, 2):
            try:
                times.append(_csv_time(row["time"]))
                lats.append(float(row["lat"]))
                lons.append(float(row["lon"]))
            except (TypeError, ValueError):
                raise GpsLogError(f"{path}:{number}: time {row['time']!r}, lat {row['lat']!r}, lon {row['lon']!r}: "
                                  "time must be Unix seconds or ISO 8601, lat and lon numbers") from None
    return _frame(times, lats, lons, path)


def read_log(path: str | Path) -> pl.DataFrame:
    """Reads a GPS log (format from the suffix: .nmea, .gpx or .csv)."""
    p = Path(path)
    fmt = log_format(p)
    if not p.is_file():
        raise GpsLogError(f"{p}: no such GPS log")
    return {"nmea": _read_nmea, "gpx": _read_gpx, "csv": _read_csv}[fmt](p)


def _nmea_angle(value: float, hemispheres: str, degree_digits: int) -> tuple[str, str]:
    hemisphere = hemispheres[0] if value >= 0 else hemispheres[1]
    value = abs(value)
    degrees = int(value)
    minutes = (value - degrees) * 60
    return f"{degrees:0{degree_digits}d}{minutes:08.5f}", hemisphere


def _nmea_lines(log: pl.DataFrame) -> list[str]:
    import pynmea2

    lines = []
    t, lat, lon = log["time_s"].to_numpy(), log["lat"].to_numpy(), log["lon"].to_numpy()
    for i in range(len(t)):
        when = dt.datetime.fromtimestamp(round(float(t[i]), 2), dt.timezone.utc)
        hms = when.strftime("%H%M%S.") + f"{when.microsecond // 10000:02d}"
        la, ns = _nmea_angle(float(lat[i]), "NS", 2)
        lo, ew = _nmea_angle(float(lon[i]), "EW", 3)
        speed, course = "", ""
        if i + 1 < len(t) or i > 0:
            j, k = (i, i + 1) if i + 1 < len(t) else (i - 1, i)
            plane = LocalPlane(float(lat[j]), float(lon[j]))
            dx, dy = plane.to_xy(np.array([lat[k]]), np.array([lon[k]]))
            span = float(t[k] - t[j]) or 1.0
            speed = f"{math.hypot(dx[0], dy[0]) / span * 3600 / 1852:.2f}"  # knots
            course = f"{math.degrees(math.atan2(dx[0], dy[0])) % 360:.1f}"
        lines.append(str(pynmea2.RMC("GP", "RMC", (hms, "A", la, ns, lo, ew, speed, course, when.strftime("%d%m%y"), "", ""))))
        lines.append(str(pynmea2.GGA("GP", "GGA", (hms, la, ns, lo, ew, "1", "08", "1.0", "0.0", "M", "0.0", "M", "", ""))))
    return lines


def write_log(log: pl.DataFrame, path: str | Path, fmt: str | None = None) -> Path:
    """Writes a log as NMEA (RMC + GGA per fix, times to 10 ms, positions
    to 10⁻⁵ minute ≈ 2 cm), GPX (a track with one segment) or CSV."""
    p = Path(path)
    fmt = fmt or log_format(p)
    if fmt not in FORMATS:
        raise GpsLogError(f"GPS log format '{fmt}' is not allowed; allowed: {', '.join(FORMATS)}")
    p.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "nmea":
        p.write_text("\r\n".join(_nmea_lines(log)) + "\r\n", encoding="ascii")
    elif fmt == "gpx":
        import gpxpy.gpx

        doc = gpxpy.gpx.GPX()
        doc.creator = "wayside"
        track = gpxpy.gpx.GPXTrack()
        segment = gpxpy.gpx.GPXTrackSegment()
        track.segments.append(segment)
        doc.tracks.append(track)
        for t, lat, lon in log.select("time_s", "lat", "lon").iter_rows():
            when = dt.datetime.fromtimestamp(round(t, 6), dt.timezone.utc)
            segment.points.append(gpxpy.gpx.GPXTrackPoint(round(lat, 8), round(lon, 8), time=when))
        p.write_text(doc.to_xml(), encoding="utf-8")
    else:
        log.select(pl.col("time_s").round(6).alias("time"), pl.col("lat").round(8), pl.col("lon").round(8)).write_csv(p)
    return p
