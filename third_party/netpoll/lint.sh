#!/usr/bin/env bash

golangci-lint run
