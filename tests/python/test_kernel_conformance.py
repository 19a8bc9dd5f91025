"""The community conformance suite, jupyter_kernel_test, with every sample filled in."""
import pathlib
import unittest

import jupyter_kernel_test

ROOT = pathlib.Path(__file__).resolve().parents[2]
PNG = ROOT / "share" / "kernelspec" / "logo-32x32.png"


class SyslabKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "syslab"
    language_name = "syslab"
    file_extension = ".syslab"

    code_hello_world = 'print "hello, world"'
    code_stderr = 'eprint "something went wrong"'

    completion_samples = [
        {"text": "countd", "matches": {"countdown"}},
        {"text": "countdown 3 de", "matches": {"delay="}},
        {"text": 'input "name?" pass', "matches": {"password="}},
        {"text": "sle", "matches": {"sleep"}},
    ]
    complete_code_samples = ['print "done"', "x = [1, 2, 3]", "for i in [1, 2] { print i }", "1 + 2"]
    incomplete_code_samples = ["for i in [1, 2] {", "print (1 +", "x = [1, 2,", 'print "a" \\']
    invalid_code_samples = ["print )", "1 +* 2", "x = ]", "for { }"]

    code_page_something = "sleep?"
    code_generate_error = "x = undefined_name"
    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "2 ** 10", "result": "1024"},
        {"code": '"ab" + "cd"', "result": '"abcd"'},
        {"code": "[1, 2.5, 3]", "result": "[1, 2.5, 3]"},
    ]
    code_display_data = [
        {"code": 'html "<b>bold</b>"', "mime": "text/html"},
        {"code": 'markdown "# Title"', "mime": "text/markdown"},
        {"code": 'latex "$x^2$"', "mime": "text/latex"},
        {"code": "svg \"<svg xmlns='http://www.w3.org/2000/svg' width='4' height='4'/>\"", "mime": "image/svg+xml"},
        {"code": f'image "{PNG}"', "mime": "image/png"},
        {"code": "show [1, 2]", "mime": "text/plain"},
    ]
    code_history_pattern = "2 ***"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "sleep"
    code_clear_output = "clear"


class SyslabIopubWelcomeTests(jupyter_kernel_test.IopubWelcomeTests):
    kernel_name = "syslab"
    support_iopub_welcome = True


if __name__ == "__main__":
    unittest.main()
