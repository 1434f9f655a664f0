# An image that runs `toolcards serve` (for docker/compose.yaml): toolcards with the MCP
# server and the PostgreSQL store, nothing else.
#   docker build -f docker/server.Dockerfile -t toolcards-server .
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install '.[mcp,postgres]' \
    && useradd --uid 1000 --create-home toolcards \
    && mkdir /workspaces && chown toolcards /workspaces
USER toolcards
WORKDIR /home/toolcards
EXPOSE 8765
CMD ["toolcards", "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]
