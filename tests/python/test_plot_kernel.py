"""A plot reaches a notebook as one display_data carrying PNG, SVG and a text description."""
import base64
import struct
import xml.etree.ElementTree as ET

from test_kernel_client import run


def test_plot_arrives_as_png_and_svg(kernel):
    km, kc = kernel
    code = ('results = sweep width=[4, 8, 16, 32] mode=["ptq", "qat"] {\n'
            '  row accuracy=0.9 - 1 / width\n'
            '}\n'
            'plot results x=width y=accuracy series=mode title="PTQ vs QAT" width=640 height=400')
    content, outputs = run(kc, code, timeout=60)
    assert content["status"] == "ok"
    figures = [m for m in outputs if m["msg_type"] == "display_data" and "image/png" in m["content"]["data"]]
    assert len(figures) == 1
    data = figures[0]["content"]["data"]
    assert set(data) >= {"image/png", "image/svg+xml", "text/plain"}
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (640, 400)
    svg = ET.fromstring(data["image/svg+xml"].encode())  # a well-formed XML document
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert "PTQ vs QAT" in "".join(svg.itertext())
    assert "2 series, 8 points" in data["text/plain"]
    assert figures[0]["content"]["metadata"] == {}


def test_table_result_has_three_representations(kernel):
    km, kc = kernel
    content, outputs = run(kc, "table width=[4, 8] accuracy=[0.5, 0.75]")
    result = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
    assert "| width | accuracy |" in result["text/markdown"]
    assert "<table>" in result["text/html"]
    assert "accuracy" in result["text/plain"]
