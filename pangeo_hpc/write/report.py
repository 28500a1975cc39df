"""``report.html``: a run's answer, figure, maps and provenance on one page that needs
no network.

Written beside ``result.nc`` by every recipe run
(:func:`pangeo_hpc.batch.pipeline.results.write_outputs`), inside the run's temporary folder,
so it appears with the other outputs or not at all. The page holds everything it shows:
the answer's table as the command line prints it, the figure (base64, inline), one
interactive map per map result, and ``summary.json``'s provenance. Its
Content-Security-Policy forbids every request (``default-src 'none'``; inline scripts,
styles and ``data:`` images only), so a browser opening it fetches nothing.

The maps are drawn by a small hand-written viewer (``report_page.js`` beside this module,
inlined): the field as base64 little-endian float32, coloured in the browser with the
figure's colour map and limits (:func:`pangeo_hpc.write.figure_kinds.colour_scale`), the
package's coastlines (:func:`pangeo_hpc.write.coastlines.joined_coastlines`) over it; drag
pans, the wheel zooms, hovering shows the value of the cell under the pointer with its
units. Writing it costs a run a few milliseconds and imports nothing new (no Bokeh): the
figure has imported matplotlib already. A field of more values than config
``pangeo-hpc.output.report-values`` is shown at every n-th cell (block means, said on
the page) to keep the page small.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pangeo_hpc import config
from pangeo_hpc.write.marks import figure_mark
from pangeo_hpc.write.outputs import atomic_file
from pangeo_hpc.write.panel_text import nice_units
from pangeo_hpc.write.result_shape import Shape, labels, result_shape

__all__ = ["REPORT", "MapLayer", "map_layers", "report_html", "write_report"]

#: the page's name in a result folder
REPORT = "report.html"
#: what the page may load: nothing from anywhere, its own inline script and style
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
#: colours per colour map sent to the page
LUT_SIZE = 256
#: the coastlines' break between two lines, in the page's int16 hundredths of a degree
BREAK = -32768


@dataclass(frozen=True)
class MapLayer:
    """One map result as the page draws it: north at the top, longitudes increasing.

    ``panels`` holds ``(label, values)``: one for a map, one per value of its other
    dimension for small multiples (``maps``). ``step`` is the stride the field was thinned
    by (1: every cell).

    Attributes
    ----------
    name : str
        The variable's name.
    long_name : str
        Its long name.
    units : str
        Its units.
    lat : np.ndarray
        Latitudes, north first.
    lon : np.ndarray
        Longitudes, increasing.
    panels : tuple[tuple[str, np.ndarray], ...]
        ``(label, values)`` of each panel.
    cmap : str
        The colour map's name.
    vmin : float
        The colour scale's lower limit.
    vmax : float
        Its upper limit.
    step : int, optional
        The stride the field was thinned by.

    Examples
    --------
    >>> import numpy as np
    >>> layer = MapLayer("tas", "air temperature", "K", lat=np.array([10.0, 0.0]),
    ...                  lon=np.array([0.0, 10.0, 20.0]), panels=(("", np.ones((2, 3))),),
    ...                  cmap="viridis", vmin=0.0, vmax=5.0)
    >>> layer.name, layer.step
    ('tas', 1)
    """

    name: str
    long_name: str
    units: str
    lat: np.ndarray
    lon: np.ndarray
    panels: tuple[tuple[str, np.ndarray], ...]
    cmap: str
    vmin: float
    vmax: float
    step: int = 1

    @property
    def east(self) -> bool:
        """Longitudes 0..360 (the coastlines shifted to match), as the figure decides."""
        return bool(self.lon.max() > 180)


def _oriented(da: xr.DataArray, shape: Shape) -> xr.DataArray:
    """``da`` with latitude decreasing and longitude increasing, (lead,) lat, lon."""
    lat, lon = shape.lat, shape.lon
    assert lat is not None and lon is not None
    lat_dim, lon_dim = da[lat].dims[0], da[lon].dims[0]
    for name, dim, up in ((lon, lon_dim, True), (lat, lat_dim, False)):
        values = np.asarray(da[name].values)
        steps = np.diff(values) if values.size > 1 else np.ones(1)
        if np.all(steps > 0) if up else np.all(steps < 0):
            continue
        if np.all(steps < 0) if up else np.all(steps > 0):
            da = da.isel({dim: slice(None, None, -1)})  # reversed: no copy
        else:
            da = da.sortby(name, ascending=up)
    order = [d for d in (shape.lead, lat_dim, lon_dim) if d is not None]
    return da.transpose(*order)


def map_layers(result: xr.Dataset, *, max_values: int | None = None) -> list[MapLayer]:
    """The map results of ``result`` (kinds ``map`` and ``maps`` of
    :func:`~pangeo_hpc.write.result_shape.result_shape`, on 1-D latitude and longitude).

    Parameters
    ----------
    result : Dataset
        Computed results.
    max_values : int, optional
        Values sent to the page over all maps; a larger field is thinned to block means
        of ``step`` x ``step`` cells. Default: config ``pangeo-hpc.output.report-values``.

    Returns
    -------
    list of MapLayer
        In the order of ``result.data_vars``.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("lat", "lon"), name="tas",
    ...                   coords={"lat": [0.0, 10.0], "lon": [0.0, 10.0, 20.0]})
    >>> [(layer.name, layer.cmap, layer.lat.tolist()) for layer in map_layers(da.to_dataset())]
    [('tas', 'viridis', [10.0, 0.0])]
    """
    from pangeo_hpc.write.figure_kinds import colour_scale, long_name, units

    limit = int(config.get("output.report-values", max_values))
    # a map has two dimensions of more than one value: the others need no closer look
    names = [n for n in result.data_vars if sum(k > 1 for k in result[n].shape) >= 2]
    shapes = [result_shape(result[name]) for name in names]
    shapes = [
        s
        for s in shapes
        if s.kind in ("map", "maps") and s.data[s.lat].ndim == 1 and s.data[s.lon].ndim == 1
    ]
    total = sum(s.data.size for s in shapes)
    step = max(1, int(np.ceil(np.sqrt(total / max(limit, 1)))))
    layers = []
    for shape in shapes:
        da = _oriented(shape.data, shape)
        if step > 1:
            lat_dim, lon_dim = da.dims[-2:]
            da = da.coarsen({lat_dim: step, lon_dim: step}, boundary="trim").mean()
        values = np.asarray(da.values, dtype="<f4")
        cmap, lo, hi, _ = colour_scale(shape.data, values)
        names = labels(da, shape.lead) if shape.lead is not None else [""]
        panels = tuple(zip(names, values.reshape(-1, *values.shape[-2:]), strict=True))
        layers.append(
            MapLayer(
                name=str(shape.data.name),
                long_name=long_name(shape.data),
                units=nice_units(units(shape.data)),
                lat=np.asarray(da[shape.lat].values, dtype="f8"),
                lon=np.asarray(da[shape.lon].values, dtype="f8"),
                panels=panels,
                cmap=cmap,
                vmin=lo,
                vmax=hi,
                step=step,
            )
        )
    return layers


def _b64(array: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


@lru_cache(maxsize=4)
def _lut(cmap: str) -> str:
    """``LUT_SIZE`` RGB colours of the matplotlib colour map ``cmap``, base64."""
    from matplotlib import colormaps

    rgb = colormaps[cmap](np.linspace(0.0, 1.0, LUT_SIZE))[:, :3]
    return _b64(np.round(rgb * 255), "u1")


@lru_cache(maxsize=1)
def _coast() -> str:
    """The shipped coastlines as stored (int16 hundredths of a degree, -180..180), lines
    apart by :data:`BREAK`, base64: the page shifts them for a map in 0..360."""
    from pangeo_hpc.write.coastlines import SCALE, stored_coastlines

    points, ends = stored_coastlines()
    assert SCALE == 100  # the page divides by 100
    return _b64(np.insert(points, ends[:-1], BREAK, axis=0), "<i2")


@lru_cache(maxsize=1)
def _version() -> str:
    return version("pangeo-hpc")


@lru_cache(maxsize=1)
def _assets() -> tuple[str, str]:
    here = Path(__file__).parent
    return (here / "report_page.js").read_text(), (here / "report_page.css").read_text()


def _json(doc: Any) -> str:
    """JSON for a ``<script>`` element: ``<``, ``>`` and ``&`` escaped, so no text in it
    (a variable's name, a path) can close the element."""
    text = json.dumps(doc, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _map_section(layer: MapLayer, index: int) -> str:
    doc = {
        "name": layer.name,
        "units": layer.units,
        "lat": layer.lat.tolist(),
        "lon": layer.lon.tolist(),
        "panels": [{"label": lab, "values": _b64(v, "<f4")} for lab, v in layer.panels],
        "lut": _lut(layer.cmap),
        "vmin": layer.vmin,
        "vmax": layer.vmax,
        "east": layer.east,
    }
    e = html.escape
    thinned = (
        f"<p class='note'>Shown in blocks of {layer.step} x {layer.step} cells (their "
        "means) to keep this page small; result.nc holds every cell.</p>"
        if layer.step > 1
        else ""
    )
    units = f" ({e(layer.units)})" if layer.units else ""
    return (
        f"<section class='map' id='map-{index}'><h3>{e(layer.long_name)}{units}</h3>"
        f"<p class='note'>{e(layer.name)}: drag to pan, wheel or +/- to zoom, hover for "
        f"values.</p>{thinned}"
        f"<script type='application/json' class='map-data'>{_json(doc)}</script></section>"
    )


def _figure(figure: Path | None) -> str:
    if figure is None or not figure.is_file():
        return ""
    mime = {".png": "image/png", ".svg": "image/svg+xml"}.get(figure.suffix.lower())
    if mime is None:  # a PDF: no inline viewer without a plug-in; the file beside the page
        name = html.escape(figure.name)
        return f"<p>The figure: <a href='{name}'>{name}</a> (beside this page).</p>"
    data = base64.b64encode(figure.read_bytes()).decode("ascii")
    return f"<img class='figure' alt='the figure of the results' src='data:{mime};base64,{data}'>"


def report_html(
    *,
    title: str,
    lines: Sequence[str],
    figure: Path | None,
    provenance: Any,
    layers: Sequence[MapLayer] = (),
) -> str:
    """The page: title, the answer's ``lines`` (as the command line prints them), the
    figure inline, one viewer per map layer, the provenance as JSON.

    Parameters
    ----------
    title : str
        The page's heading (the figure's).
    lines : sequence of str
        :func:`pangeo_hpc.batch.pipeline.results.summary_text`'s lines.
    figure : Path, optional
        ``plot.png`` or ``plot.svg``, embedded; a PDF is linked (it lies beside the page).
    provenance : any
        ``summary.json``'s ``provenance``, shown as indented JSON.
    layers : sequence of MapLayer
        From :func:`map_layers`.

    Returns
    -------
    str
        A complete HTML document with no external reference.

    Examples
    --------
    >>> page = report_html(title="ERA5 mean", lines=["tas: 288.1 K"], figure=None,
    ...                    provenance={"recipe": "era5-mean"}, layers=[])
    >>> page.startswith("<!DOCTYPE html>"), "tas: 288.1 K" in page
    (True, True)
    """
    script, style = _assets()
    e = html.escape
    heading = "<br>".join(e(line) for line in title.splitlines())
    coast = f"<script type='application/json' id='coast'>{_json(_coast())}</script>"
    maps = "".join(_map_section(layer, i) for i, layer in enumerate(layers))
    # one line here (json's C encoder; indenting takes its Python one, ~10 ms), indented
    # by the page's script
    prov = e(json.dumps(provenance, default=str))
    maker = f"{figure_mark()} {_version()}"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='generator' content='{e(maker)}'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        f"<title>{e(title.splitlines()[0] if title else 'pangeo-hpc result')}</title>"
        f"<style>{style}</style></head><body><h1>{heading}</h1>"
        f"<h2>Answer</h2><pre class='answer'>{e(chr(10).join(lines))}</pre>"
        f"<h2>Figure</h2>{_figure(figure)}"
        + (f"<h2>Maps</h2>{maps}{coast}" if layers else "")
        + f"<h2>Provenance</h2><pre class='provenance'>{prov}</pre>"
        f"<script>{script}</script></body></html>\n"
    )


def write_report(
    path: str | Path,
    result: xr.Dataset,
    *,
    title: str,
    lines: Sequence[str],
    figure: Path | None,
    provenance: Any,
) -> Path:
    """Write :func:`report_html` for ``result`` to ``path``, whole or not at all
    (:func:`pangeo_hpc.write.outputs.atomic_file`: a new file, or a page this package
    wrote, marked by its ``generator``).

    Parameters
    ----------
    path : str or Path
        The page's file.
    result : xr.Dataset
        The results.
    title : str
        The page's title.
    lines : Sequence[str]
        The run's summary lines.
    figure : Path or None
        The figure written beside it, or ``None``.
    provenance : Any
        The run's provenance record.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    InputError
        If ``path`` may not be written (:func:`pangeo_hpc.write.guard.check_file`).

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("lat", "lon"), name="tas",
    ...                   coords={"lat": [0.0, 10.0], "lon": [0.0, 10.0, 20.0]})
    >>> page = write_report("report.html", da.to_dataset(), title="ERA5 mean",
    ...                     lines=["tas: 2.5"], figure=None, provenance={})
    >>> print(page)
    report.html
    """
    page = report_html(
        title=title,
        lines=lines,
        figure=figure,
        provenance=provenance,
        layers=map_layers(result),
    )
    with atomic_file(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return Path(path)
