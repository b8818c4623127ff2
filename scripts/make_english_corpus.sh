#!/usr/bin/env bash
# Builds an English text corpus for `poslens-cli train --task text --task-option corpus=OUT_DIR`
# from Debian packages (main only) that ship real English text, so a language-model experiment
# needs no download beyond apt:
#
#   bash scripts/make_english_corpus.sh OUT_DIR
#
# OUT_DIR gets one file per source, without an extension (the text task reads only those), in
# the fortune format: blocks separated by a line "%". Fortune files keep their own blocks; long
# documents are cut at blank lines into blocks of whole paragraphs of >= 1500 characters. Every
# file is normalised to UTF-8 (a line that is not valid UTF-8 is read as Latin-1), overstruck
# characters ("_\bX") keep their last character, and control characters other than newline and
# tab are dropped. A lone "%" line inside a document becomes "%%" so that it splits nothing.
# OUT_DIR/SOURCES.txt lists each file's package, source and size. The output depends only on
# the installed package versions (file lists are sorted; nothing random, no timestamps).
#
# Left out on purpose: fortunes-mario (Portuguese), the offensive fortune files (fortunes-off),
# the translated debian-hints, fortunes' ascii-art (pictures), and large sources that are
# mostly code or markup (perl-doc, python3-doc, dict-gcide's dictionary markup).
set -euo pipefail
export LC_ALL=C

OUT=${1:?usage: make_english_corpus.sh OUT_DIR}
case "$OUT" in /|/usr|/usr/*|/etc|/etc/*|"$HOME") echo "refusing to write to $OUT" >&2; exit 2;; esac

# --- 1. Packages: install only the missing ones, so a second run needs neither root nor network.
PACKAGES=(fortunes fortunes-min fortune-anarchism fortunes-bofh-excuses fortunes-debian-hints
  bible-kjv jargon-text dict-devil dict-foldoc debian-faq debian-history developers-reference maint-guide
  debian-reference-en gnu-standards perl gzip)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --- 2. The normaliser: MODE fortune (keep the file's "%" blocks) or doc (paragraph blocks).
# Reads the text on stdin, writes the corpus file on stdout. Plain perl, no modules.
NORMALISE='
  my $mode = shift; binmode STDOUT, ":utf8";
  local $/; my $text = <STDIN>; $text = "" unless defined $text;
  my @lines;
  for my $l (split /\n/, $text) {
    utf8::decode($l);                                 # invalid UTF-8 stays bytes = Latin-1
    1 while $l =~ s/[^\x08]\x08//;                    # overstrike "X\bY" -> "Y"
    $l =~ s/[\x00-\x08\x0a-\x1f\x7f-\x9f\x{feff}]//g; # control characters (tab is \x09: kept)
    $l =~ s/\s+\z//;                                  # trailing blanks
    push @lines, $l;
  }
  my @blocks;
  if ($mode eq "fortune") {
    my @cur;
    for my $l (@lines, "%") {
      if ($l eq "%") { my $b = join("\n", @cur); $b =~ s/\A\n+|\n+\z//g;
                       push @blocks, $b if $b =~ /\S/; @cur = (); }
      else { push @cur, $l }
    }
  } else {
    my ($block, $para) = ("", "");
    for my $l (@lines, "") {
      $l = "%%" if $l eq "%";
      if ($l ne "") { $para .= ($para eq "" ? "" : "\n") . $l; next }
      next if $para eq "";
      $block .= ($block eq "" ? "" : "\n\n") . $para; $para = "";
      if (length($block) >= 1500) { push @blocks, $block; $block = "" }
    }
    push @blocks, $block if $block =~ /\S/;
  }
  print join("\n%\n", @blocks), "\n" if @blocks;
'

mkdir -p "$OUT"
if [ -n "$(ls -A "$OUT")" ] && [ ! -f "$OUT/SOURCES.txt" ]; then
  echo "$OUT is not empty and holds no SOURCES.txt (not a corpus made here): refusing" >&2; exit 2
fi
TMP="$OUT.partial"; rm -rf "$TMP"; mkdir -p "$TMP"
printf '# file\tpackage\tbytes\tblocks\tsource\n' > "$TMP/SOURCES.txt"

# add NAME PACKAGE MODE SOURCE-DESCRIPTION: converts stdin into TMP/NAME and records it.
add() {
  perl -e "$NORMALISE" "$3" > "$TMP/$1"
  local bytes blocks
  bytes=$(wc -c < "$TMP/$1"); blocks=$(( bytes ? $(grep -cx '%' "$TMP/$1" || true) + 1 : 0 ))
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$bytes" "$blocks" "$4" >> "$TMP/SOURCES.txt"
}

# --- 3. The sources.
# Fortune files: every file without an extension that these packages put directly in
# /usr/share/games/fortunes (the English ones; translations sit in subfolders).
for pkg in fortunes fortunes-min fortune-anarchism fortunes-bofh-excuses fortunes-debian-hints; do
  for f in $(dpkg -L "$pkg" | grep -E '^/usr/share/games/fortunes/[^/.]+$' | sort); do
    [ -f "$f" ] || continue                           # the translations' folders
    [ "$(basename "$f")" = ascii-art ] && continue    # pictures, not text
    add "fortunes-$(basename "$f")" "$pkg" fortune "$f" < "$f"
  done
done

# The King James Bible: bible-kjv-text stores it in its own compressed format (/usr/lib/bible.data),
# so the bible program prints it, Genesis 1:1 to Revelation 22:21, as chapters of numbered
# verses; the verse numbers are dropped.
bible gen1:1-rev22:21 < /dev/null | sed -E 's/^ +[0-9]+ //' |
  add bible-kjv bible-kjv-text doc "bible gen1:1-rev22:21"

# Dictionaries of prose entries (dictd files are gzip-compatible). FOLDOC's {cross-references}
# lose their braces; the dictd header lines "00-database-..." are dropped.
zcat /usr/share/dictd/devil.dict.dz | grep -v '^00-database' |
  add devils-dictionary dict-devil doc /usr/share/dictd/devil.dict.dz
zcat /usr/share/dictd/foldoc.dict.dz | grep -v '^00-database' | perl -0pe 's/\{([^{}]*)\}/$1/g' |
  add foldoc dict-foldoc doc /usr/share/dictd/foldoc.dict.dz
zcat /usr/share/doc/jargon-text/jargon.txt.gz |
  add jargon-file jargon-text doc /usr/share/doc/jargon-text/jargon.txt.gz

# Manuals shipped as plain text (English versions).
for spec in \
  "debian-faq debian-faq /usr/share/doc/debian/FAQ/debian-faq.en.txt.gz" \
  "debian-history debian-history /usr/share/doc/debian-history/docs/project-history.en.txt.gz" \
  "debian-developers-reference developers-reference /usr/share/developers-reference/developers-reference.txt.gz" \
  "debian-maint-guide maint-guide /usr/share/doc/maint-guide/maint-guide.en.txt.gz" \
  "debian-reference debian-reference-en /usr/share/debian-reference/debian-reference.en.txt.gz" \
  "gnu-coding-standards gnu-standards /usr/share/doc/gnu-standards/standards.text.gz" \
  "gnu-maintainers gnu-standards /usr/share/doc/gnu-standards/maintain.text.gz"; do
  read -r name pkg file <<< "$spec"
  zcat "$file" | add "$name" "$pkg" doc "$file"
done

# --- 4. Replace OUT_DIR with the new corpus and report.
rm -rf "$OUT"; mv "$TMP" "$OUT"
tail -n +2 "$OUT/SOURCES.txt" | sort -t$'\t' -k2,2 -s |
  awk -F'\t' 'function flush() { if (pkg != "") printf "%-22s %3d file(s) %10d bytes %7d blocks\n", pkg, n, b, k }
    $2 != pkg { flush(); pkg = $2; n = b = k = 0 }
    { n++; b += $3; k += $4; tb += $3; tk += $4 }
    END { flush(); printf "%-22s %11s %10d bytes %7d blocks\n", "total", "", tb, tk }' > "$OUT/summary.tmp"
sed 's/^/# /' "$OUT/summary.tmp" >> "$OUT/SOURCES.txt"; rm "$OUT/summary.tmp"
cat "$OUT/SOURCES.txt"   # per file, then per package and the total
echo "corpus: $OUT (per-file sizes in $OUT/SOURCES.txt)"
