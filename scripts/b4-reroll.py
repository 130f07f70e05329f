#!/usr/bin/python3
"""Mark the series revision written by 'b4 send -o' as sent and reroll.

b4's 'prep --manual-reroll' fetches the thread from lore, which this
machine cannot reach; b4 send does the same job after a real send by
calling b4.ez.reroll() with the cover letter it sent, which is what this
does with the cover letter that 'b4 send -o' wrote.
usage (in the kernel tree, on the series' branch; PYTHONPATH: b4 0.14's):
    b4-reroll.py COVER.eml
"""
import argparse
import email
import email.policy
import logging
import sys

import b4
import b4.ez


def main():
    with open(sys.argv[1], "rb") as f:
        msg = email.message_from_binary_file(f, policy=email.policy.default)
    msgid = msg["Message-Id"].strip().strip("<>")
    body = msg.get_body(("plain",)).get_content()
    tag_msg = "%s\n\n%s" % (msg["Subject"], body)
    # What b4's own commands set up first (its user config included).
    b4.setup_config(argparse.Namespace(config=None))
    b4.logger.addHandler(logging.StreamHandler())
    b4.logger.setLevel(logging.INFO)
    b4.ez.reroll(b4.git_get_current_branch(None), tag_msg, msgid)


if __name__ == "__main__":
    main()
