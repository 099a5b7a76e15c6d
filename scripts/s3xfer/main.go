// Command s3xfer moves one file to or from S3 with the AWS SDK for Go v2's
// transfer manager alone (no fdl, no gocloud): the baseline that
// scripts/bench-s3.sh compares fdl's push and checkout with.
//
//	s3xfer upload   S3URL KEY FILE   # transfermanager.UploadObject (multipart, 8 MiB parts)
//	s3xfer download S3URL KEY FILE   # transfermanager.DownloadObject (concurrent ranged GETs)
//	s3xfer mkbucket S3URL            # make the URL's bucket if it does not exist
//	s3xfer copy S3URL DSTPREFIX      # every object under the URL's prefix copied under DSTPREFIX
//	                                 # (same bucket), GET then PUT, 8 at a time: scripts/bench-mirror.sh's baseline
//
// S3URL is an fdl-style s3:// URL (bucket, optional prefix, and the query
// options region, endpoint, use_path_style); credentials come from the
// environment. KEY is relative to the URL's prefix.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	ok := len(os.Args) == 5 && (os.Args[1] == "upload" || os.Args[1] == "download") || len(os.Args) == 3 && os.Args[1] == "mkbucket" ||
		len(os.Args) == 4 && os.Args[1] == "copy"
	if !ok {
		fmt.Fprintln(os.Stderr, "usage: s3xfer upload|download S3URL KEY FILE, s3xfer copy S3URL DSTPREFIX, or s3xfer mkbucket S3URL")
		os.Exit(2)
	}
	args := append(os.Args[1:], "", "")
	if err := run(context.Background(), args[0], args[1], args[2], args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "s3xfer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, op, raw, key, file string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	q := u.Query()
	var opts []func(*config.LoadOptions) error
	if r := q.Get("region"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	endpoint := q.Get("endpoint")
	if endpoint != "" {
		opts = append(opts, config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = q.Get("use_path_style") == "true"
	})
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		o.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	})
	if op == "copy" {
		return copyAll(ctx, client, u.Host, strings.Trim(u.Path, "/")+"/", strings.Trim(key, "/")+"/")
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		key = p + "/" + key
	}
	switch op {
	case "mkbucket":
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(u.Host)})
		if err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
			return err
		}
		return nil
	case "upload":
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String(u.Host), Key: aws.String(key), Body: f})
		return err
	default:
		f, err := os.Create(file)
		if err != nil {
			return err
		}
		if _, err := tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{Bucket: aws.String(u.Host), Key: aws.String(key), WriterAt: f}); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// copyAll copies every object under prefix src to the same key under
// prefix dst, in one bucket: a listing, then a GET and a PUT of each
// object, 8 objects at a time (what a plain object-by-object copy of a
// repository costs).
func copyAll(ctx context.Context, client *s3.Client, bucket, src, dst string) error {
	var keys []string
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(src)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	work := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(dst + strings.TrimPrefix(k, src)), Body: bytes.NewReader(b)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, k := range keys {
		select {
		case work <- k:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err == nil {
		fmt.Printf("%d objects copied\n", len(keys))
	}
	return err
}
