# Build stage: install dependencies (Bun comes from npm) and compile the single executable.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx bun scripts/build.ts /src/dist/ringbase

# Run stage: just the binary, as an unprivileged user, with its data on a volume.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /data ringbase && mkdir -p /data && chown ringbase /data
COPY --from=build /src/dist/ringbase /usr/local/bin/ringbase
USER ringbase
VOLUME ["/data"]
EXPOSE 8000
# The binary checks itself (there is no curl in this image): exit 0 when /api/v1/health answers 200.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/ringbase", "health", "--http", "127.0.0.1:8000"]
ENTRYPOINT ["/usr/local/bin/ringbase"]
CMD ["serve", "--http", "0.0.0.0:8000", "--dir", "/data"]
