mkdir -p third_party/makeself && cp /usr/bin/makeself third_party/makeself/makeself.sh && cp /usr/share/makeself/makeself-header.sh third_party/makeself/
