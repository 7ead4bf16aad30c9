# gw as a container: built in one stage (npm ci with the dev dependencies runs `prepare`, which bundles
# dist/main.js and the dashboard in dist/web), run in the next with production dependencies only, as an unprivileged user.
#   docker build -t gw .
#   docker run -p 8080:8080 -v gw-data:/data -e GW_ADMIN_USERNAME=admin -e GW_ADMIN_PASSWORD=... \
#     -e GW_ENCRYPTION_KEY=$(openssl rand -hex 32) gw

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Sources first: npm ci runs the build (the prepare script) once the packages are in.
COPY tsconfig.json ./
COPY src ./src
COPY gen ./gen
COPY web ./web
RUN npm ci --no-audit --no-fund

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: only the build's dev dependencies have any, and prepare would need them.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The launcher npm start runs too: the node flags and the malloc setting (src/serving-environment.ts says why).
COPY bin ./bin
COPY deploy/gw.json /etc/gw/gw.json
RUN groupadd --system gw && useradd --system --gid gw --home-dir /data --shell /usr/sbin/nologin gw \
  && mkdir -p /data && chown gw:gw /data
USER gw
VOLUME /data
EXPOSE 8080
# The container listens beyond loopback, so admin auth must be on: GW_REQUIRE_AUTH makes that a boot error.
ENV GW_REQUIRE_AUTH=1
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["bin/gw-serve", "--config", "/etc/gw/gw.json", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/data"]
