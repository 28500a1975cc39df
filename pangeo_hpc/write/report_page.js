// report.html's map viewer (pangeo_hpc/write/report.py): each <section class="map"> holds its
// field as JSON (base64 little-endian float32 per panel, latitude decreasing, longitude
// increasing), drawn on a canvas in plate carree with the package's coastlines. Drag pans,
// the wheel or +/- zooms, double-click resets, hovering shows the cell's value with units.
"use strict";
(function () {
  const MISSING = [191, 191, 191]; // grey where values are missing, as in the figures
  const BREAK = -32768; // between two coastlines (report.BREAK)

  function bytes(b64) {
    const text = atob(b64);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }

  function coastlines(east) {
    const el = document.getElementById("coast");
    if (!el) return [];
    const xy = new Int16Array(bytes(JSON.parse(el.textContent)).buffer);
    const lines = [];
    let line = [];
    for (let k = 0; k + 1 < xy.length; k += 2) {
      if (xy[k] === BREAK) {
        if (line.length > 1) lines.push(line);
        line = [];
        continue;
      }
      let x = xy[k] / 100;
      if (east && x < 0) x += 360;
      if (line.length && Math.abs(x - line[line.length - 1][0]) > 180) {
        if (line.length > 1) lines.push(line); // across the 0/360 seam
        line = [];
      }
      line.push([x, xy[k + 1] / 100]);
    }
    if (line.length > 1) lines.push(line);
    return lines;
  }

  // the index of the value of `axis` (increasing when `up`) nearest to `v`
  function nearest(axis, v, up) {
    let lo = 0;
    let hi = axis.length - 1;
    const before = (a) => (up ? a < v : a > v);
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (before(axis[mid])) lo = mid;
      else hi = mid;
    }
    return Math.abs(axis[lo] - v) <= Math.abs(axis[hi] - v) ? lo : hi;
  }

  function edges(axis) {
    const n = axis.length;
    const first = n > 1 ? (axis[1] - axis[0]) / 2 : 0.5;
    const last = n > 1 ? (axis[n - 1] - axis[n - 2]) / 2 : 0.5;
    return [axis[0] - first, axis[n - 1] + last];
  }

  function format(v) {
    return Number.isFinite(v) ? v.toPrecision(6) : "missing";
  }

  function viewer(section, doc) {
    const lut = bytes(doc.lut);
    const nlat = doc.lat.length;
    const nlon = doc.lon.length;
    const [left, right] = edges(doc.lon);
    const [top, bottom] = edges(doc.lat); // latitude decreasing: top is north
    const panels = doc.panels.map((p) => new Float32Array(bytes(p.values).buffer));
    const lines = coastlines(doc.east);
    const units = doc.units ? " " + doc.units : "";

    const box = document.createElement("div");
    box.className = "viewer";
    const tools = document.createElement("div");
    tools.className = "tools";
    const button = (text, title, act) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = text;
      b.title = title;
      b.addEventListener("click", act);
      tools.appendChild(b);
    };
    const canvas = document.createElement("canvas");
    canvas.className = "field";
    const width = Math.min(940, section.clientWidth || 940);
    const ratio = (top - bottom) / (right - left);
    const height = Math.round(Math.max(120, Math.min(width * ratio, 560)));
    canvas.width = width;
    canvas.height = height;
    const tip = document.createElement("div");
    tip.className = "tip";
    const ctx = canvas.getContext("2d");

    const off = document.createElement("canvas");
    off.width = nlon;
    off.height = nlat;
    const offCtx = off.getContext("2d");
    let panel = 0;
    function paint() {
      const image = offCtx.createImageData(nlon, nlat);
      const values = panels[panel];
      const span = doc.vmax - doc.vmin || 1;
      const n = lut.length / 3;
      const data = image.data;
      for (let k = 0; k < values.length; k++) {
        const v = values[k];
        data[4 * k + 3] = 255;
        if (!Number.isFinite(v)) {
          data[4 * k] = MISSING[0];
          data[4 * k + 1] = MISSING[1];
          data[4 * k + 2] = MISSING[2];
          continue;
        }
        const i = Math.min(n - 1, Math.max(0, Math.round(((v - doc.vmin) / span) * (n - 1))));
        data[4 * k] = lut[3 * i];
        data[4 * k + 1] = lut[3 * i + 1];
        data[4 * k + 2] = lut[3 * i + 2];
      }
      offCtx.putImageData(image, 0, 0);
    }

    const fit = Math.min(width / (right - left), height / (top - bottom));
    const view = { cx: (left + right) / 2, cy: (top + bottom) / 2, s: fit };
    const px = (lon) => (lon - view.cx) * view.s + width / 2;
    const py = (lat) => (view.cy - lat) * view.s + height / 2;
    const lonAt = (x) => (x - width / 2) / view.s + view.cx;
    const latAt = (y) => view.cy - (y - height / 2) / view.s;

    function draw() {
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, 0, width, height);
      ctx.imageSmoothingEnabled = false;
      const dx = (right - left) / nlon;
      const dy = (top - bottom) / nlat;
      const c0 = Math.max(0, Math.floor((lonAt(0) - left) / dx));
      const c1 = Math.min(nlon, Math.ceil((lonAt(width) - left) / dx));
      const r0 = Math.max(0, Math.floor((top - latAt(0)) / dy));
      const r1 = Math.min(nlat, Math.ceil((top - latAt(height)) / dy));
      if (c1 > c0 && r1 > r0) {
        const x = px(left + c0 * dx);
        const y = py(top - r0 * dy);
        const w = (c1 - c0) * dx * view.s;
        const h = (r1 - r0) * dy * view.s;
        ctx.drawImage(off, c0, r0, c1 - c0, r1 - r0, x, y, w, h);
      }
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 0.6;
      ctx.beginPath();
      for (const line of lines) {
        ctx.moveTo(px(line[0][0]), py(line[0][1]));
        for (let k = 1; k < line.length; k++) ctx.lineTo(px(line[k][0]), py(line[k][1]));
      }
      ctx.stroke();
    }

    function zoom(factor, x, y) {
      const lon = lonAt(x);
      const lat = latAt(y);
      view.s = Math.min(fit * 400, Math.max(fit, view.s * factor));
      view.cx = lon - (x - width / 2) / view.s;
      view.cy = lat + (y - height / 2) / view.s;
      draw();
    }

    function hover(x, y) {
      const lon = lonAt(x);
      const lat = latAt(y);
      if (lon < left || lon > right || lat > top || lat < bottom) {
        tip.style.display = "none";
        return;
      }
      const col = nearest(doc.lon, lon, true);
      const row = nearest(doc.lat, lat, false);
      const v = panels[panel][row * nlon + col];
      tip.dataset.row = row;
      tip.dataset.col = col;
      tip.textContent =
        `${doc.name}: ${format(v)}${Number.isFinite(v) ? units : ""} at ` +
        `${doc.lat[row].toFixed(2)}°N, ${doc.lon[col].toFixed(2)}°E`;
      tip.style.left = `${canvas.offsetLeft + Math.min(x + 14, width - 10)}px`;
      tip.style.top = `${canvas.offsetTop + y + 14}px`;
      tip.style.display = "block";
    }

    let drag = null;
    canvas.addEventListener("pointerdown", (ev) => {
      drag = { x: ev.offsetX, y: ev.offsetY };
      canvas.classList.add("dragging");
    });
    window.addEventListener("pointerup", () => {
      drag = null;
      canvas.classList.remove("dragging");
    });
    canvas.addEventListener("pointermove", (ev) => {
      if (drag) {
        view.cx -= (ev.offsetX - drag.x) / view.s;
        view.cy += (ev.offsetY - drag.y) / view.s;
        drag = { x: ev.offsetX, y: ev.offsetY };
        draw();
      }
      hover(ev.offsetX, ev.offsetY);
    });
    canvas.addEventListener("pointerleave", () => {
      tip.style.display = "none";
    });
    canvas.addEventListener(
      "wheel",
      (ev) => {
        ev.preventDefault();
        zoom(ev.deltaY < 0 ? 1.25 : 0.8, ev.offsetX, ev.offsetY);
      },
      { passive: false }
    );
    const reset = () => {
      Object.assign(view, { cx: (left + right) / 2, cy: (top + bottom) / 2, s: fit });
      draw();
    };
    canvas.addEventListener("dblclick", reset);
    button("+", "zoom in", () => zoom(1.5, width / 2, height / 2));
    button("\u2212", "zoom out", () => zoom(1 / 1.5, width / 2, height / 2));
    button("reset", "the whole map", reset);
    if (panels.length > 1) {
      const slider = document.createElement("input");
      slider.type = "range";
      slider.min = 0;
      slider.max = panels.length - 1;
      slider.value = 0;
      slider.className = "panel";
      const label = document.createElement("span");
      label.textContent = " " + doc.panels[0].label;
      slider.addEventListener("input", () => {
        panel = Number(slider.value);
        label.textContent = " " + doc.panels[panel].label;
        paint();
        draw();
      });
      tools.appendChild(slider);
      tools.appendChild(label);
    }

    const bar = document.createElement("div");
    bar.className = "bar";
    const scale = document.createElement("canvas");
    scale.width = 256;
    scale.height = 12;
    const sctx = scale.getContext("2d");
    const n = lut.length / 3;
    for (let i = 0; i < 256; i++) {
      const k = Math.round((i / 255) * (n - 1));
      sctx.fillStyle = `rgb(${lut[3 * k]},${lut[3 * k + 1]},${lut[3 * k + 2]})`;
      sctx.fillRect(i, 0, 1, 12);
    }
    const low = document.createElement("span");
    low.textContent = doc.vmin.toPrecision(3);
    const high = document.createElement("span");
    high.textContent = doc.vmax.toPrecision(3) + units;
    bar.append(low, scale, high);

    box.append(tools, canvas, tip, bar);
    section.appendChild(box);
    paint();
    draw();
  }

  for (const pre of document.querySelectorAll("pre.provenance")) {
    pre.textContent = JSON.stringify(JSON.parse(pre.textContent), null, 2);
  }
  for (const section of document.querySelectorAll("section.map")) {
    viewer(section, JSON.parse(section.querySelector("script.map-data").textContent));
  }
})();
