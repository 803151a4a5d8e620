{
  description = "envsnap: snapshot your environment variables and diff them later";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    flake-utils.url = "github:numtide/flake-utils";
    # Only used by shell.nix so non-flake users can still run `nix-shell`.
    flake-compat = {
      url = "github:edolstra/flake-compat";
      flake = false;
    };
  };

  outputs =
    {
      self,
      nixpkgs,
      flake-utils,
      ...
    }:
    flake-utils.lib.eachDefaultSystem (
      system:
      let
        pkgs = nixpkgs.legacyPackages.${system};
        inherit (pkgs) lib;
        version = self.shortRev or self.dirtyShortRev or "dev";
      in
      {
        packages = {
          envsnap = pkgs.buildGoModule {
            pname = "envsnap";
            inherit version;
            src = lib.fileset.toSource {
              root = ./.;
              fileset = lib.fileset.unions [
                ./go.mod
                ./go.sum
                ./main.go
                ./internal
              ];
            };
            vendorHash = "sha256-Qk3l0p9Jw8N2cX4o1bVfR6yTz5uHs7dGe0mKaLwPiYc=";

            # Link against nixpkgs' sqlite instead of the amalgamation bundled
            # with go-sqlite3.
            tags = [ "libsqlite3" ];
            nativeBuildInputs = [
              pkgs.pkg-config
              pkgs.installShellFiles
            ];
            buildInputs = [ pkgs.sqlite ];

            ldflags = [
              "-s"
              "-w"
              "-X main.version=${version}"
            ];

            postInstall = ''
              installShellCompletion --cmd envsnap \
                --bash <($out/bin/envsnap completion bash) \
                --zsh <($out/bin/envsnap completion zsh)
            '';

            meta = {
              description = "Snapshot environment variables and diff them later";
              license = lib.licenses.mit;
              mainProgram = "envsnap";
            };
          };
          default = self.packages.${system}.envsnap;
        };

        devShells = {
          default = pkgs.mkShell {
            packages = with pkgs; [
              go
              gopls
              golangci-lint
              delve
              jq
            ];
            # go-sqlite3 falls back to its bundled copy here; mkShell's stdenv
            # provides the C compiler cgo needs.
            CGO_ENABLED = "1";
            shellHook = ''
              export GOPATH="$PWD/.direnv/go"
              export PATH="$GOPATH/bin:$PATH"
            '';
          };

          # Lean shell for CI: `nix develop .#ci --command golangci-lint run`
          ci = pkgs.mkShell {
            packages = builtins.attrValues {
              inherit (pkgs)
                go
                golangci-lint
                goreleaser
                ;
            };
          };
        };

        formatter = pkgs.nixfmt-rfc-style;
      }
    );
}
