#!/usr/bin/env python3
"""Fails on a broken link in the built book: `check-links.py BUILD_DIR`.

mdBook only warns about a link to a page or heading that does not exist,
so CI runs this after `mdbook build docs`. It reads the HTML mdBook wrote
(so a heading's id is mdBook's, not a guess at its rules) and checks every
relative link of every chapter:

- a link inside the book must name a file mdBook wrote, and its `#fragment`
  an id in that file;
- a link that leaves the book names a file of the repository (`../sdk`,
  `../wit/hook.wit`: the pages are the repository's Markdown too), which
  must exist, resolved from docs/ as the Markdown source would be.

The README, the front page, links into the book by its Markdown files
(`docs/agents.md#…`): each such link is checked against the built page the
same way, and any other relative link of the README against the repository.

`print.html` (every chapter on one page) is mdBook's rewrite of the same
links and is skipped. Exit 0: no broken link; 1: each is printed as
`page: link: why`; 2: usage.
"""
import html.parser
import os
import re
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name == "href" and value and tag == "a":
                self.links.append(value)


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: check-links.py BUILD_DIR (the book mdbook built)", file=sys.stderr)
        return 2
    book = os.path.realpath(sys.argv[1])
    source = os.path.dirname(os.path.realpath(__file__))  # docs/
    pages, broken, checked = {}, [], 0
    for dirpath, _, names in os.walk(book):
        for name in names:
            if name.endswith(".html") and name not in ("print.html", "toc.html", "404.html"):
                pages[os.path.join(dirpath, name)] = None
    if not pages:
        print(f"{book}: no pages: was the book built?", file=sys.stderr)
        return 1
    for path in sorted(pages):
        for link in parse(path).links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or url.netloc or link.startswith("//"):
                continue
            checked += 1
            rel = os.path.relpath(path, book)
            target = os.path.normpath(
                os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path))
            ) if url.path else path
            if target == book or target.startswith(book + os.sep):
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.isfile(target):
                    broken.append(f"{rel}: {link}: no such page in the book")
                    continue
                if url.fragment and target.endswith(".html"):
                    if pages.get(target) is None:
                        pages[target] = parse(target).ids
                    if url.fragment not in pages[target]:
                        broken.append(f"{rel}: {link}: no heading with that id")
            else:
                # Leaves the book: a file of the repository, from docs/.
                outside = os.path.relpath(target, book)
                in_repo = os.path.normpath(
                    os.path.join(source, os.path.dirname(rel), os.path.relpath(target, os.path.dirname(path)))
                )
                if not os.path.exists(in_repo):
                    broken.append(f"{rel}: {link}: {outside} is not a file of the repository")
    repo = os.path.dirname(source)
    with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
        readme = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for link in re.findall(r"\]\(([^)\s]+)\)", readme):
        url = urllib.parse.urlsplit(link)
        if url.scheme or url.netloc:
            continue
        checked += 1
        if url.path.startswith("docs/") and url.path.endswith(".md"):
            page = os.path.join(book, url.path[len("docs/"):-len(".md")] + ".html")
            if not os.path.isfile(page):
                broken.append(f"README.md: {link}: no such page in the book")
            elif url.fragment and url.fragment not in parse(page).ids:
                broken.append(f"README.md: {link}: no heading with that id")
        elif url.path and not os.path.exists(os.path.join(repo, url.path)):
            broken.append(f"README.md: {link}: not a file of the repository")
        elif not url.path and url.fragment:
            broken.append(f"README.md: {link}: the front page links into the book, not to itself")
    for line in broken:
        print(line)
    print(f"{len(pages)} pages, {checked} relative links, {len(broken)} broken", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
