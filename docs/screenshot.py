#!/usr/bin/env python3
"""Renders the cockpit, running on the demo in tmux, to docs/cockpit.png.

Usage: python3 docs/screenshot.py [path/to/luzia]   (needs tmux, Pillow, DejaVu Sans Mono)
The picture is what tmux holds for the pane, colours included: no mock-up.
"""
import os
import re
import subprocess
import sys
import time

from PIL import Image, ImageDraw, ImageFont

W, H = 140, 38
BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/luzia"
OUT = os.path.join(os.path.dirname(__file__), "cockpit.png")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"

# A dark palette (xterm-like) for the 16 colours; 16-255 follow the xterm cube.
BASE16 = [
    (0x1d, 0x1f, 0x21), (0xcc, 0x44, 0x44), (0x5f, 0xb3, 0x5f), (0xd7, 0xaf, 0x3f),
    (0x5f, 0x87, 0xd7), (0xaf, 0x5f, 0xaf), (0x4f, 0xb3, 0xb3), (0xc5, 0xc8, 0xc6),
    (0x76, 0x76, 0x76), (0xff, 0x66, 0x66), (0x87, 0xd7, 0x87), (0xff, 0xd7, 0x5f),
    (0x87, 0xaf, 0xff), (0xd7, 0x87, 0xd7), (0x87, 0xd7, 0xd7), (0xff, 0xff, 0xff),
]
FG, BG = (0xd0, 0xd0, 0xd0), (0x16, 0x18, 0x1b)


def xterm(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    g = 8 + (n - 232) * 10
    return (g, g, g)


def tmux(*args):
    return subprocess.run(["tmux", "-L", "luzia-shot", *args], check=True, capture_output=True, text=True).stdout


def capture():
    env = f"XDG_STATE_HOME=/tmp/luzia-shot-state TERM=xterm-256color"
    tmux("new-session", "-d", "-x", str(W), "-y", str(H), f"env {env} {BIN} tui --demo")
    try:
        time.sleep(26)  # let the demo agents write output and progress, fail, and stall
        tmux("send-keys", "j", "j")
        time.sleep(2)
        return tmux("capture-pane", "-e", "-p")
    finally:
        subprocess.run(["tmux", "-L", "luzia-shot", "kill-server"], capture_output=True)


def render(text):
    font, bold = ImageFont.truetype(FONT, 15), ImageFont.truetype(BOLD, 15)
    cw = round(font.getlength("M"))
    ch = 19
    img = Image.new("RGB", (cw * W + 20, ch * H + 20), BG)
    d = ImageDraw.Draw(img)
    for y, line in enumerate(text.split("\n")[:H]):
        fg, bg, is_bold, rev = FG, None, False, False
        x = 0
        for part in re.split(r"(\x1b\[[0-9;]*m)", line):
            m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
            if m:
                codes = [int(c) if c else 0 for c in m.group(1).split(";")]
                i = 0
                while i < len(codes):
                    c = codes[i]
                    if c == 0:
                        fg, bg, is_bold, rev = FG, None, False, False
                    elif c == 1:
                        is_bold = True
                    elif c == 7:
                        rev = True
                    elif c in (22,):
                        is_bold = False
                    elif c == 27:
                        rev = False
                    elif 30 <= c <= 37:
                        fg = BASE16[c - 30]
                    elif 90 <= c <= 97:
                        fg = BASE16[c - 90 + 8]
                    elif 40 <= c <= 47:
                        bg = BASE16[c - 40]
                    elif c == 39:
                        fg = FG
                    elif c == 49:
                        bg = None
                    elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                        col = xterm(codes[i + 2])
                        if c == 38:
                            fg = col
                        else:
                            bg = col
                        i += 2
                    i += 1
                continue
            for chr_ in part:
                f, b = (bg or BG, fg) if rev else (fg, bg)
                px, py = 10 + x * cw, 10 + y * ch
                if b:
                    d.rectangle([px, py, px + cw - 1, py + ch - 1], fill=b)
                d.text((px, py), chr_, font=bold if is_bold else font, fill=f)
                x += 1
    img.save(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    render(capture())
